"""The batch-size sweep: one point per (global batch size, seed), then the report.

Budget modes: `equal_steps` (the default; every point makes the same number of generator
updates, as in the TF-Replicator comparison) or `equal_images` (`steps` is the budget of the
batch-64 point and others get steps * 64 / batch, so every point sees the same images).
Learning-rate scaling relative to batch 64: none (SN-GAN's setting), linear, or sqrt.
A directory may hold several arms (experiments.config.SweepAxes.arm): the main one, and
further comparisons whose point names end in _ARM.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

from common.progress import format_duration
from experiments import configs, preflight, sweep_files
from experiments.config import BASELINE_BATCH, RunConfig, SweepAxes, check_overrides
from experiments.running import cost_model, lock, sweep_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepSpec:
    """A run config and the axes a sweep varies over it: one point per (batch size, seed).

    The axes' own config overrides (steps, decay start, evaluation cadence, settings) are
    already in `base`, under the command line's (`named_spec`)."""
    base: RunConfig
    axes: SweepAxes

    def __post_init__(self):
        self.points()  # validates every point's config now, not hours into the sweep

    def lr_factor(self, batch: int) -> float:
        ratio = batch / BASELINE_BATCH
        return {"none": 1.0, "linear": ratio, "sqrt": math.sqrt(ratio)}[self.axes.lr_scaling]

    def steps_for(self, batch: int) -> int:
        if self.axes.steps_by_batch:
            return dict(self.axes.steps_by_batch)[batch]
        steps = self.base.train.steps
        if self.axes.budget == "equal_images":
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
        if self.base.eval.every and not self.axes.steps_by_batch:
            # the same number of evaluations per point, whatever its length
            fraction = self.base.eval.every / t.steps
            overrides["eval.every"] = max(1, round(steps * fraction))
        return self.base.with_overrides(overrides)

    def point_name(self, batch: int, seed: int) -> str:
        return sweep_files.point_name(batch, seed, self.axes.arm)

    def points(self) -> list[tuple[str, RunConfig]]:
        return [(self.point_name(b, s), self.point_config(b, s))
                for s in self.axes.seeds for b in self.axes.batch_sizes]

    def describe(self, out: str) -> str:
        b, x = self.base, self.axes
        return (f"sweep: preset {b.preset}{f', arm {x.arm}' if x.arm else ''}, batch "
                f"sizes {list(x.batch_sizes)}, seeds {list(x.seeds)}, {self._steps_text()} G "
                f"steps ({x.budget}), lr scaling {x.lr_scaling}, n_dis {b.train.n_dis}, "
                f"replicator {b.train.replicator}, protocol {b.eval.protocol} -> {out}")

    def _steps_text(self) -> str:
        if not self.axes.steps_by_batch:
            return str(self.base.train.steps)
        return ("/".join(str(self.steps_for(b)) for b in self.axes.batch_sizes)
                + " (per batch size)")

    def to_dict(self) -> dict:
        """What sweep.json records: the settings shared by the arm's points, and its points
        (and each batch size's steps, when the arm sets them)."""
        x = self.axes
        spec = dict(base=self.base.to_dict(), lr_scaling=x.lr_scaling, budget=x.budget,
                    arm=x.arm, points=[[b, s] for s in x.seeds for b in x.batch_sizes])
        if x.steps_by_batch:
            spec["steps_by_batch"] = {str(b): s for b, s in sorted(x.steps_by_batch)}
        return spec


def named_spec(preset: str, sweep: str | None = None, changes: dict | None = None,
               overrides: dict | None = None) -> SweepSpec:
    """A named sweep of an experiment config (experiments/configs/PRESET.py; None: its first),
    with `changes` to its axes and config `overrides` applied over it, every point checked
    against its data (preflight)."""
    axes = dataclasses.replace(configs.sweep_axes(preset, sweep), **(changes or {}))
    # every override has its field's type, including one replaced below (the batch size)
    check_overrides(overrides or {})
    # The base takes the sweep's first batch size: every point sets its own, and the preset's
    # must not be checked against the replicas when the sweep never uses it.
    base = configs.preset(preset, {**axes.overrides(), **(overrides or {}),
                                   "train.global_batch_size": axes.batch_sizes[0]})
    spec = SweepSpec(preflight.check_run(base), axes)
    for _, cfg in spec.points():
        preflight.check_run(cfg)
    return spec


def dry_run(spec: SweepSpec, out_dir: str, calibrate: bool = True) -> Iterator[str]:
    """Lines for the terminal: each point's name, G steps and G learning rate; then, with
    `calibrate`, what the sweep would cost here (calibration.estimate_sweep: it starts
    TensorFlow and times a few steps, writing nothing to `out_dir`)."""
    for name, cfg in spec.points():
        yield f"{name} {cfg.train.steps} {cfg.train.g_lr}"
    if calibrate:
        from experiments.evaluation.evaluator import Evaluator
        from experiments.running.calibration import estimate_sweep
        from replication.startup import start_replicator
        replicator = start_replicator(spec.base.train.replicator)
        yield from estimate_sweep(spec, out_dir, replicator, Evaluator).lines()


def run_sweep(spec: SweepSpec, out_dir: str, replicator, evaluator,
              calibrate: bool = True, restart: bool = False) -> list:
    """Run every unfinished point (skipping finished ones); returns their records.

    Locks `out_dir` and claims it for this sweep first (sweep_dir.claim: another study's
    directory is refused; `restart` deletes its points first). With `calibrate`, a few timed
    steps at the smallest and largest batch and one timed evaluation first give the ETA its
    shape (`calibrated_prior`); the evaluator's one-off set-up it pays is reused by every
    point. The report is not written here: the CLI composes "sweep, then report", so running
    never depends on reporting.
    """
    lock.lock_dir(out_dir)  # re-entrant: the command line took it before TensorFlow started
    sweep_dir.claim(out_dir, spec.to_dict(), restart=restart)
    points = spec.points()
    t0 = time.perf_counter()
    from experiments.running.point import run_point  # TensorFlow-heavy

    costs = [cost_model.PointCost.for_point(cfg) for _, cfg in points]
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
        record = run_point(cfg, os.path.join(out_dir, sweep_files.POINTS, name), replicator,
                           evaluator, point=name, arm=spec.axes.arm,
                           sweep_lr_scaling=spec.axes.lr_scaling, sweep_budget=spec.axes.budget)
        results.append(record)
        seconds = time.perf_counter() - t
        # a point computed now informs the cost model; a finished one skipped does not
        costs[i - 1] = cost_model.PointCost.for_point(
            cfg, seconds if seconds > 1.0 else 0.0,
            record.eval_wall_time_s if seconds > 1.0 else None)
    log.info(f"sweep finished in {time.perf_counter() - t0:.0f} s")
    return results


def calibrated_prior(spec: SweepSpec, out_dir: str, replicator, evaluator
                     ) -> cost_model.CostModel | None:
    """The dry run's calibration, as the prior of the sweep's ETA; None when fewer than two
    batch sizes are left to run (then scaling by FLOPs is all the ETA needs).

    Costs a few steps and one evaluation; in exchange the ETA is right from the start,
    instead of scaled by FLOPs from a small first point, whose per-step overhead it overrates.
    """
    from experiments.running import calibration, run_dir
    left = {cfg.train.global_batch_size for name, cfg in spec.points()
            if run_dir.finished_record(cfg, os.path.join(out_dir, sweep_files.POINTS, name))
            is None}
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

