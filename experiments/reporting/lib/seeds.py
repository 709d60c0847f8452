"""Per-seed values of finished points and the ratio of two arms (stats.py computes it).

A sweep directory may also hold control points of another budget (`sweep_budget`
'equal_images': the baseline batch trained on as many images as the target batch sees);
`split_by_budget` keeps them out of the batch table, which compares one budget only."""
from __future__ import annotations

import math

from experiments.records import Point, PointRecord
from experiments.reporting.lib import stats
from experiments.reporting.lib.metrics import METRICS, finite

EQUAL_STEPS, EQUAL_IMAGES = "equal_steps", "equal_images"


def budget(record: PointRecord) -> str:
    """Records from before the label existed are equal-steps sweeps."""
    return record.sweep_budget or EQUAL_STEPS


def split_by_budget(points: list[Point]) -> tuple[list[Point], list[Point]]:
    """(the table's points, equal-images control points). The table holds the equal-steps
    points when there are any, else every point (a sweep run wholly at equal images)."""
    steps = [p for p in points if budget(p.record) == EQUAL_STEPS]
    if not steps:
        return list(points), []
    return steps, [p for p in points if budget(p.record) == EQUAL_IMAGES]


def final_value(record: PointRecord, metric: str):
    return METRICS[metric].value(record.final)


def replicate_values(record: PointRecord, metric: str) -> list[float]:
    """The final score and its evaluation-seed replicates (one checkpoint)."""
    if record.final is None:
        return []
    return finite([METRICS[metric].value(s) for s in [record.final, *record.replicates]])


def best_value(point: Point, metric: str):
    """Best score during training (max IS, min FID): an optimistic figure."""
    m = METRICS[metric]
    values = finite(m.value(s) for s in [*point.history, point.record.final] if s)
    return (max(values) if m.higher_is_better else min(values)) if values else None


def seed_values(records: list[PointRecord], metric: str) -> dict[int, float]:
    """{training seed: final value} of the finished points with a finite value."""
    out = {r.seed: final_value(r, metric) for r in records if r.status == "done"}
    return {s: v for s, v in out.items() if v is not None and math.isfinite(v)}


def ratio_vs_baseline(base: list[PointRecord], other: list[PointRecord], metric: str):
    """Welch RatioInterval of `other` over `base` with seeds as independent runs, or None where
    it cannot be formed. With one training seed per arm, the evaluation replicates of the two
    checkpoints stand in for seeds, and the method says so (evaluation noise only)."""
    a, b = seed_values(base, metric), seed_values(other, metric)
    if not a or not b:
        return None
    try:
        if len(a) == 1 and len(b) == 1:
            ra = replicate_values(next(r for r in base if r.seed in a), metric)
            rb = replicate_values(next(r for r in other if r.seed in b), metric)
            if len(ra) > 1 and len(rb) > 1:
                return stats.welch_ratio(ra, rb, method=stats.EVAL_RESAMPLING)
        return stats.welch_ratio(list(a.values()), list(b.values()))
    except ValueError:  # e.g. a non-positive score has no log
        return None


def paired_vs_baseline(base: list[PointRecord], other: list[PointRecord], metric: str):
    """The sensitivity analysis: seed k with seed k over the seeds both arms ran."""
    a, b = seed_values(base, metric), seed_values(other, metric)
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    try:
        return stats.paired_ratio([a[s] for s in seeds], [b[s] for s in seeds])
    except ValueError:
        return None
