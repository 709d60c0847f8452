"""A dry run's time estimate for a sweep, measured on this machine before any point runs.

A few timed training steps at the sweep's smallest and largest batch size and one timed
evaluation calibrate `cost_model` (seconds per step = a + b * FLOPs per step, c per
evaluation, plus each point's set-up: building the models and tracing the step), which then
prices every point that has not finished. Nothing is written to the sweep's directory:
calibration trains throw-away models in a temporary directory.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import statistics
import tempfile
import time

from common.progress import format_duration
from experiments import sweep_files
from experiments.config import RunConfig
from experiments.running import cost_model, run_dir

log = logging.getLogger(__name__)

CALIBRATION_STEPS = 3  # timed steps per batch size, after one untimed warm-up step


@dataclasses.dataclass(frozen=True)
class StepTiming:
    batch: int
    setup_s: float  # building G, D and the optimisers + the first step (tracing)
    step_s: float  # median seconds per step after the first
    step_flops: float


@dataclasses.dataclass(frozen=True)
class SweepEstimate:
    """What the sweep will cost on this machine: per point and in total."""
    model: cost_model.CostModel
    steps: tuple[StepTiming, ...]
    eval_setup_s: float  # once per sweep: classifier, reference statistics, tracing
    eval_s: float  # one evaluation once traced
    points: tuple[tuple[str, float | None], ...]  # (name, seconds); None: finished earlier

    @property
    def points_s(self) -> float:
        """The unfinished points alone (a sweep that calibrated has paid the set-up)."""
        return sum(s for _, s in self.points if s is not None)

    @property
    def total_s(self) -> float:
        left = any(s is not None for _, s in self.points)
        return (self.eval_setup_s if left else 0.0) + self.points_s

    def lines(self) -> list[str]:
        """The estimate as the dry run prints it."""
        out = [f"calibration: batch {s.batch}: {s.step_s:.3f} s/step "
               f"({s.step_flops / s.step_s / 1e9:.0f} GFLOP/s), set-up {s.setup_s:.1f} s"
               for s in self.steps]
        out.append(f"calibration: one evaluation {self.eval_s:.1f} s, once per sweep "
                   f"{self.eval_setup_s:.1f} s (classifier, reference statistics, tracing)")
        out += [f"estimate: {name} " + ("finished earlier" if seconds is None
                                        else format_duration(seconds))
                for name, seconds in self.points]
        out.append(f"estimated time on this machine: {format_duration(self.total_s)} "
                   f"({sum(s is None for _, s in self.points)} of {len(self.points)} points "
                   "finished)")
        return out


def time_training(cfg: RunConfig, replicator, steps: int = CALIBRATION_STEPS) -> StepTiming:
    """Set-up and per-step time of `cfg`'s training, on its real input pipeline."""
    from experiments.running.point import training_input_fn
    from sngan import flops
    from sngan.training import GANTrainer

    t = cfg.train
    # no checkpoint, summary or log line inside the timed steps; the lr schedule costs nothing
    train_cfg = dataclasses.replace(t, steps=steps + 1, lr_decay_start=None,
                                    checkpoint_every=10 ** 9, summary_every=10 ** 9,
                                    log_every=10 ** 9)
    with tempfile.TemporaryDirectory(prefix="sngan-calibration-") as tmp:
        t0 = time.perf_counter()
        trainer = GANTrainer(cfg.model, train_cfg, replicator, training_input_fn(cfg), tmp)
        trainer.fit(until=1)
        setup = time.perf_counter() - t0
        times = []
        for step in range(2, steps + 2):
            t1 = time.perf_counter()
            trainer.fit(until=step)
            times.append(time.perf_counter() - t1)
    step_s = statistics.median(times)
    return StepTiming(batch=t.global_batch_size, setup_s=max(0.0, setup - step_s),
                      step_s=step_s, step_flops=flops.train_config_step_flops(cfg.model, t))


def time_evaluation(cfg: RunConfig, replicator, evaluator_factory) -> tuple[float, float]:
    """(one-off set-up, seconds per evaluation) of scoring a freshly built generator."""
    from sngan import models
    t0 = time.perf_counter()
    evaluator = evaluator_factory(cfg)
    with replicator.context():
        generator = models.build_generator(cfg.model)
    evaluator.score(generator, replicator, step=0)  # first: traces the sampler
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    evaluator.score(generator, replicator, step=0)
    per_eval = time.perf_counter() - t1
    return max(0.0, first - per_eval), per_eval


def estimate_sweep(spec, out_dir: str, replicator, evaluator_factory,
                   steps: int = CALIBRATION_STEPS) -> SweepEstimate:
    """Calibrate on this machine and price every point of `spec` not finished in `out_dir`."""
    points = spec.points()
    by_batch = {cfg.train.global_batch_size: cfg for _, cfg in points}
    timed = []
    for batch in sorted({min(by_batch), max(by_batch)}):
        log.info("calibrating: %d timed steps at batch %d", steps, batch)
        timed.append(time_training(by_batch[batch], replicator, steps))
    log.info("calibrating: one evaluation")
    eval_setup, per_eval = time_evaluation(spec.base, replicator, evaluator_factory)
    model = cost_model.calibrate(
        {s.batch: s.step_s for s in timed}, {s.batch: s.step_flops for s in timed},
        eval_seconds=per_eval, setup_seconds=statistics.mean(s.setup_s for s in timed))
    priced = []
    for name, cfg in points:
        finished = run_dir.finished_record(cfg, os.path.join(out_dir, sweep_files.POINTS, name))
        cost = None if finished is not None else model.predict(
            cost_model.PointCost.for_point(cfg))
        priced.append((name, cost))
    return SweepEstimate(model, tuple(timed), eval_setup, per_eval, tuple(priced))


__all__ = ["SweepEstimate", "StepTiming", "estimate_sweep", "time_evaluation",
           "time_training"]
