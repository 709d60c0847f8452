"""Probe arms: time-to-target arms of fewer batch sizes than a fit needs (e.g. batch 512 at
another lr), set against the headline arm at the same batch: steps to each of its IS targets,
and any divergence (a result, never hidden)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from experiments.records import Point
from experiments.reporting.lib import markdown, mccandlish
from experiments.reporting.lib.crossings import crossings, curve_of
from experiments.reporting.lib.metrics import describe
from experiments.reporting.sections import time_to_target as ttt

KEY, ORDER = "probes", 60
STEPS = ("Steps to each IS target at the same batch (geometric mean over seeds; '>' censored) "
         "and the steps saved by '{arm}':")


@dataclass(frozen=True)
class ProbePoint:
    point: str
    batch: int
    seed: int
    g_lr: float
    d_lr: float
    status: str
    diverged_at: int | None
    final_is: float | None


@dataclass(frozen=True)
class ProbeTarget:
    """Steps to one IS target per seed, the probe's and the headline arm's at the same batch,
    and main / probe (a bound when one side is censored)."""
    target: float
    batch: int
    probe: list[float]
    probe_censored: list[bool]
    main: list[float]
    main_censored: list[bool]
    steps_saved: float
    bound: str


@dataclass(frozen=True)
class Probe:
    points: list[ProbePoint]
    targets: list[ProbeTarget]
    against: str  # the headline arm


def probe(points: list[Point], main: str, main_rows, main_points: list[Point]) -> Probe:
    listed = [ProbePoint(os.path.basename(p.dir), p.config.train.global_batch_size,
                         p.config.train.seed, p.config.train.g_lr, p.config.train.d_lr,
                         p.record.status, p.record.diverged_at,
                         p.record.final.is_mean if p.record.final else None) for p in points]
    curves = [curve_of(p) for p in points if p.history]
    batches = sorted({c.batch for c in curves})
    twins = [curve_of(p) for p in main_points if p.record.global_batch_size in batches]
    targets = []
    for r in main_rows if curves else []:
        mine, theirs = crossings(curves, "is_mean", r.target), crossings(twins, "is_mean", r.target)
        for b in batches:
            cs, ts = mine.get(b, []), theirs.get(b, [])
            if cs and ts:
                s = mccandlish.speedup({1: ts, 2: cs}, 1, 2, bootstrap=0)
                targets.append(ProbeTarget(
                    r.target, b, [c.step for c in cs], [c.censored for c in cs],
                    [c.step for c in ts], [c.censored for c in ts], s.steps_saved, s.bound))
    return Probe(listed, targets, main)


def compute(study, earlier: dict) -> dict[str, Probe] | None:
    main, fitted = ttt.headline_arm(study), earlier.get(ttt.KEY) or {}
    arms = [a for a in study.time_to_target_arms if a not in fitted and study.arm(a)
            and a not in study.comparison.lr_search_arms]
    if main not in fitted or not arms:
        return None
    rows, points = fitted[main].metrics["is_mean"], ttt.full_arms(study)[main]
    return {arm: probe(study.arm(arm), main, rows, points) for arm in arms}


def _steps(steps, censored) -> str:
    return f"{'> ' * any(censored)}{describe(steps).geomean:.0f}"


def render(result: dict[str, Probe], study) -> str:
    lines = []
    for arm, res in result.items():
        lines += [f"## Probe arm '{arm}' against '{res.against}'", ""]
        lines.append(markdown.table(
            ["point", "batch", "G lr", "D lr", "status", "diverged at", "final IS"],
            [[p.point, str(p.batch), f"{p.g_lr:.3g}", f"{p.d_lr:.3g}", p.status,
              ttt.fmt(p.diverged_at), ttt.fmt(p.final_is, ".2f")] for p in res.points]))
        rows = [[f"{t.target:.1f}", str(t.batch), _steps(t.main, t.main_censored),
                 _steps(t.probe, t.probe_censored), f"{t.bound}{ttt.fmt(t.steps_saved, '.2f')}x"]
                for t in res.targets]
        lines += ["", STEPS.format(arm=arm), "",
                  markdown.table(["IS target", "batch", res.against, arm, "saved"], rows), ""]
    return "\n".join(lines)
