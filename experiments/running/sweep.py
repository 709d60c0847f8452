"""The batch-size sweep: one point per (global batch size, seed), then the report.

Budget modes: `equal_steps` (the default; every point makes the same number of generator
updates, as in the TF-Replicator comparison) or `equal_images` (`steps` is the budget of the
batch-64 point and others get steps * 64 / batch, so every point sees the same images).
Learning-rate scaling relative to batch 64: none (SN-GAN's setting), linear, or sqrt.
"""
from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass

from common.progress import format_duration
from experiments.config import BASELINE_BATCH, BUDGET_MODES, LR_SCALING, ConfigError, RunConfig
from experiments.running import cost_model, sweep_dir

log = logging.getLogger(__name__)

# The quick default: the paper's comparison (64 vs 512) and five batch sizes, enough for the
# trend test to reach p < 0.05. 128 and 256 are left out because they cost 37% of the full
# range's compute: the default then fits 30 min on a 2-core CPU with a ~125 GFLOP/s peak.
DEFAULT_BATCH_SIZES = (8, 16, 32, 64, 512)



@dataclass(frozen=True)
class SweepSpec:
    base: RunConfig
    batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES
    seeds: tuple[int, ...] = (0,)
    lr_scaling: str = "none"
    budget: str = "equal_steps"

    def __post_init__(self):
        if self.lr_scaling not in LR_SCALING:
            raise ConfigError(f"lr_scaling={self.lr_scaling!r} is not one of {list(LR_SCALING)}")
        if self.budget not in BUDGET_MODES:
            raise ConfigError(f"budget={self.budget!r} is not one of {list(BUDGET_MODES)}")
        if not self.batch_sizes or any(b <= 0 for b in self.batch_sizes):
            raise ConfigError(f"batch sizes must be positive, got {self.batch_sizes}")
        if not self.seeds:
            raise ConfigError("at least one seed is needed")
        self.points()  # validates every point's config now, not hours into the sweep

    def lr_factor(self, batch: int) -> float:
        ratio = batch / BASELINE_BATCH
        return {"none": 1.0, "linear": ratio, "sqrt": math.sqrt(ratio)}[self.lr_scaling]

    def steps_for(self, batch: int) -> int:
        steps = self.base.train.steps
        if self.budget == "equal_images":
            steps = max(1, round(steps * BASELINE_BATCH / batch))
        return steps

    def point_config(self, batch: int, seed: int) -> RunConfig:
        t = self.base.train
        steps = self.steps_for(batch)
        decay = t.lr_decay_start
        if decay is not None:  # keep the decay at the same fraction of training
            decay = min(steps - 1, round(decay * steps / t.steps))
        f = self.lr_factor(batch)
        overrides = {"train.global_batch_size": batch, "train.seed": seed,
                     "train.steps": steps, "train.lr_decay_start": decay,
                     "train.g_lr": t.g_lr * f, "train.d_lr": t.d_lr * f,
                     "train.checkpoint_every": min(t.checkpoint_every, steps)}
        if self.base.eval.every:
            # the same number of evaluations per point, whatever its length
            fraction = self.base.eval.every / t.steps
            overrides["eval.every"] = max(1, round(steps * fraction))
        return self.base.with_overrides(overrides)

    def points(self) -> list[tuple[str, RunConfig]]:
        return [(f"bs{b:04d}_seed{s}", self.point_config(b, s))
                for s in self.seeds for b in self.batch_sizes]

    def to_dict(self) -> dict:
        return dict(base=self.base.to_dict(), batch_sizes=list(self.batch_sizes),
                    seeds=list(self.seeds), lr_scaling=self.lr_scaling, budget=self.budget)


def run_sweep(spec: SweepSpec, out_dir: str, replicator, evaluator,
              calibrate: bool = True) -> list:
    """Run every unfinished point (skipping finished ones); returns their records.

    With `calibrate`, a few timed steps at the smallest and largest batch and one timed
    evaluation first give the ETA its shape (`calibrated_prior`); the evaluator's one-off
    set-up it pays is reused by every point. The report is not written here: the CLI composes
    "sweep, then report", so running never depends on reporting.
    """
    sweep_dir.claim(out_dir, spec.to_dict())  # refuses another sweep's directory
    points = spec.points()
    t0 = time.perf_counter()
    from experiments.running.point import run_point  # TensorFlow-heavy

    costs = [point_cost(cfg) for _, cfg in points]
    prior = calibrated_prior(spec, out_dir, replicator, evaluator) if calibrate else None
    results = []
    for i, (name, cfg) in enumerate(points, 1):
        left = cost_model.predict_remaining(costs, prior=prior)
        eta = "?" if left is None else format_duration(left)
        batch = cfg.train.global_batch_size
        log.info(f"=== point {i}/{len(points)}: {name} (batch {batch}, "
                 f"{cfg.train.steps} G steps, lr x{spec.lr_factor(batch):.3g}) "
                 f"| sweep elapsed {format_duration(time.perf_counter() - t0)}, ETA {eta}")
        t = time.perf_counter()
        record = run_point(cfg, os.path.join(out_dir, "points", name), replicator,
                           evaluator, point=name, sweep_lr_scaling=spec.lr_scaling,
                           sweep_budget=spec.budget)
        results.append(record)
        seconds = time.perf_counter() - t
        # a point computed now informs the cost model; a finished one skipped does not
        costs[i - 1] = point_cost(cfg, seconds if seconds > 1.0 else 0.0,
                                  record.eval_wall_time_s if seconds > 1.0 else None)
    log.info(f"sweep finished in {time.perf_counter() - t0:.0f} s")
    return results


def calibrated_prior(spec: SweepSpec, out_dir: str, replicator, evaluator
                     ) -> cost_model.CostModel | None:
    """The dry run's calibration, as the prior of the sweep's ETA; None when fewer than two
    batch sizes are left to run (then scaling by FLOPs is all the ETA needs).

    Costs a few steps and one evaluation (30 s of the default sweep's 588 s, measured); in
    exchange the ETA is right from the start, not 2.5x too high after a small first point.
    """
    from experiments.running import calibration, run_dir
    left = {cfg.train.global_batch_size for name, cfg in spec.points()
            if run_dir.finished_record(cfg, os.path.join(out_dir, "points", name)) is None}
    if len(left) < 2:
        return None
    t = time.perf_counter()
    try:
        est = calibration.estimate_sweep(spec, out_dir, replicator, lambda cfg: evaluator)
    except Exception as e:  # noqa: BLE001 -- an ETA is no reason to stop a sweep
        log.warning(f"calibration failed ({type(e).__name__}: {e}); the ETA will come from "
                    "the finished points alone")
        return None
    steps = ", ".join(f"batch {s.batch} {s.step_s:.3f} s/step" for s in est.steps)
    log.info(f"calibrated in {time.perf_counter() - t:.0f} s ({steps}; one evaluation "
             f"{est.eval_s:.1f} s): its points should take {format_duration(est.points_s)}")
    return est.model


def point_cost(cfg: RunConfig, seconds: float | None = None,
               eval_seconds: float | None = None) -> cost_model.PointCost:
    """What a point costs (training FLOPs, evaluations) for the sweep's ETA."""
    from sngan import flops
    t = cfg.train
    step_flops = flops.train_step_flops(cfg.model, t.global_batch_size, t.n_dis,
                                        t.g_batch_multiplier)
    return cost_model.PointCost.for_point(cfg, step_flops, seconds, eval_seconds)
