"""Steps to a target score: where each training curve first crosses it.

McCandlish et al. 2018 (arXiv 1812.06162) measure the steps S and examples E a training needs
to reach a fixed quality, per batch size; the critical batch comes from how S falls with B
(lib/mccandlish.py). The crossing of target T is linearly interpolated between the last
evaluation below T and the first at or above it. A curve that never reaches T is censored at
its last evaluated step (the target lies beyond it), and a curve already at T at its first
evaluation is crossed at or before that step: both are kept and labelled, never dropped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from experiments.reporting.lib.metrics import METRICS as REGISTRY

# the scores with a target grid (lib/metrics.py), by record field: what a curve holds
METRICS = {m.field: m for m in REGISTRY.values() if m.targets}
MIN_BATCH_SIZES = 3  # a target is analysed when this many batch sizes reach it (S has 2 params)
PLAYERS = ("d", "g")


@dataclass(frozen=True)
class Crossing:
    """Where one curve reaches a target. `step` is the interpolated crossing; when `censored`
    the curve never got there and `step` is its last evaluated step (a lower bound); when
    `before_first` it was at the target at its first evaluation, `step` (an upper bound)."""
    step: float
    censored: bool = False
    before_first: bool = False

    @property
    def reached(self) -> bool:
        return not self.censored


def first_crossing(steps, values, target: float) -> Crossing:
    """The first step at which the piecewise-linear curve through (steps, values) reaches
    `target` (values >= target). Non-finite values (a diverged evaluation) count as below."""
    steps, values = list(steps), list(values)
    if not steps or len(steps) != len(values) or any(b <= a for a, b in zip(steps, steps[1:])):
        raise ValueError("a curve needs one value per step, at increasing steps")
    ok = [v is not None and math.isfinite(v) and v >= target for v in values]
    if True not in ok:
        return Crossing(float(steps[-1]), censored=True)
    i = ok.index(True)
    if i == 0:
        return Crossing(float(steps[0]), before_first=True)
    (s0, v0), (s, v) = (steps[i - 1], values[i - 1]), (steps[i], values[i])
    if v0 is None or not math.isfinite(v0):  # nothing to interpolate from
        return Crossing(float(s))
    return Crossing(float(s0 + (target - v0) / (v - v0) * (s - s0)))


@dataclass(frozen=True)
class Curve:
    """One point's evaluations: its batch, seed, D updates per G step and (step, score)s."""
    batch: int
    seed: int
    n_dis: int
    steps: tuple[int, ...]
    scores: dict  # metric -> tuple of values, one per step
    b_simple: dict  # player ('d', 'g') -> tuple of smoothed B_simple (or None), one per step

    def crossing(self, metric: str, target: float) -> Crossing:
        return first_crossing(self.steps, self.scores[metric], target)

    def b_simple_at(self, player: str, step: float) -> float | None:
        """The smoothed B_simple at `step`, linearly interpolated between evaluations."""
        xy = [(s, b) for s, b in zip(self.steps, self.b_simple.get(player, ()))
              if b is not None and math.isfinite(b) and b > 0]
        return float(np.interp(step, *zip(*xy))) if xy else None


def curve_of(point) -> Curve:
    """A records.Point as a Curve (its eval_history)."""
    h = sorted(point.history, key=lambda e: e.step)
    return Curve(point.record.global_batch_size, point.record.seed, point.config.train.n_dis,
                 tuple(e.step for e in h), {m: tuple(getattr(e, m) for e in h) for m in METRICS},
                 {p: tuple(getattr(e, f"b_simple_{p}") for e in h) for p in PLAYERS})


def crossings(curves: list[Curve], metric: str, target: float) -> dict[int, list[Crossing]]:
    """{batch: [one Crossing per seed, in seed order]}."""
    out: dict[int, list[Crossing]] = {}
    for c in sorted(curves, key=lambda c: (c.batch, c.seed)):
        out.setdefault(c.batch, []).append(c.crossing(metric, target))
    return out


def reaching_batches(found: dict[int, list[Crossing]]) -> list[int]:
    """Batch sizes all of whose seeds reach the target."""
    return [b for b, cs in sorted(found.items()) if cs and all(c.reached for c in cs)]


def target_grid(curves: list[Curve], metric: str) -> list[float]:
    """Targets from the metric's grid start (IS 3.0, accuracy 0.2) in its steps, up to the
    highest that MIN_BATCH_SIZES batch sizes reach with every seed."""
    out, (target, spacing) = [], METRICS[metric].targets
    while len(reaching_batches(crossings(curves, metric, target))) >= MIN_BATCH_SIZES:
        out.append(round(target, 6))
        target += spacing
    return out
