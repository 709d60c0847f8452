"""One row per global batch size: final and best scores over seeds, and ratios to batch 64
with 95% Welch intervals (see statistics.py for how they are computed).

A sweep directory may also hold control points of another budget (`sweep_budget`
'equal_images': batch 64 trained as many images as batch 512 sees); `split_by_budget` keeps
them out of the batch table, which compares points of one budget only."""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from experiments.config import BASELINE_BATCH
from experiments.records import Point, PointRecord
from experiments.reporting.lib import stats as statistics

# metric -> (Scores field, higher is better)
METRICS = {"is": ("is_mean", True), "fid": ("fid", False), "kid": ("kid_mean", False),
           "acc": ("accuracy", True), "intra_fid": ("intra_fid", False),
           "precision": ("precision", True), "recall": ("recall", True)}
RATIO_METRICS = ("is", "fid", "acc")


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


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _mean_std(values):
    values = _finite(values)
    if not values:
        return None, None
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)


def final_value(record: PointRecord, metric: str):
    return getattr(record.final, METRICS[metric][0]) if record.final else None


def replicate_values(record: PointRecord, metric: str) -> list[float]:
    """The final score and its evaluation-seed replicates (one checkpoint)."""
    if record.final is None:
        return []
    field = METRICS[metric][0]
    return _finite([getattr(s, field) for s in [record.final, *record.replicates]])


def best_value(point: Point, metric: str):
    """Best score during training (max IS, min FID): an optimistic figure."""
    field, higher = METRICS[metric]
    values = _finite(getattr(s, field) for s in [*point.history, point.record.final] if s)
    return (max(values) if higher else min(values)) if values else None


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
                return statistics.welch_ratio(ra, rb, method=statistics.EVAL_RESAMPLING)
        return statistics.welch_ratio(list(a.values()), list(b.values()))
    except ValueError:  # e.g. a non-positive score has no log
        return None


def paired_vs_baseline(base: list[PointRecord], other: list[PointRecord], metric: str):
    """The sensitivity analysis: seed k with seed k over the seeds both arms ran."""
    a, b = seed_values(base, metric), seed_values(other, metric)
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    try:
        return statistics.paired_ratio([a[s] for s in seeds], [b[s] for s in seeds])
    except ValueError:
        return None


def summarise(points: list[Point]) -> list[dict]:
    by_batch: dict[int, list[Point]] = defaultdict(list)
    for p in points:
        by_batch[p.record.global_batch_size].append(p)
    base = [p.record for p in by_batch.get(BASELINE_BATCH, [])]
    rows = []
    for batch in sorted(by_batch):
        group = by_batch[batch]
        recs = [p.record for p in group]
        done = [r for r in recs if r.status == "done"]
        row = dict(batch=batch, seeds=len(recs), done=len(done),
                   diverged=sum(r.status == "diverged" for r in recs),
                   steps=recs[0].steps, images_seen=recs[0].images_seen,
                   wall_time_s=float(np.mean([r.train_wall_time_s + r.eval_wall_time_s
                                              for r in recs])))
        for metric in METRICS:
            mean, std = _mean_std(final_value(r, metric) for r in done)
            if len(done) == 1 and std is None:  # one seed: spread over evaluation seeds
                std = _mean_std(replicate_values(done[0], metric))[1]
            row[metric], row[f"{metric}_std"] = mean, std
        row["is_mean"] = row.pop("is")
        row["is_std_kind"] = "seeds" if len(done) > 1 else "evaluation seeds"
        if len(done) == 1 and row["is_std"] is None:
            row["is_std"], row["is_std_kind"] = done[0].final.is_std, "splits"
        row["kid_std"] = row["kid_std"] if len(done) > 1 or row["kid_std"] is not None \
            else (done[0].final.kid_std if done else None)
        row["best_is"] = _mean_std(best_value(p, "is") for p in group)[0]
        row["best_fid"] = _mean_std(best_value(p, "fid") for p in group)[0]
        for metric in RATIO_METRICS:
            ci = ratio_vs_baseline(base, recs, metric) if base else None
            row[f"{metric}_change_vs_64"] = None if ci is None else 100.0 * (ci.ratio - 1.0)
            row[f"{metric}_ratio_ci"] = None if ci is None else ci.to_dict()
        row["other_bn_modes"] = other_bn_modes(done)
        rows.append(row)
    return rows


def other_bn_modes(done: list[PointRecord]) -> dict:
    """Re-scorings of the final checkpoints under the same protocol in other generator BN
    modes (`evaluate --bn-mode`), averaged over the seeds that have them."""
    out = {}
    keys = sorted({k for r in done for k in r.evaluations
                   if r.final and k == f"{r.final.protocol.protocol}/{k.split('/')[-1]}"
                   and k.split("/")[-1] != r.final.protocol.bn_mode})
    for key in keys:
        scores = [r.evaluations[key] for r in done if key in r.evaluations]
        out[key.split("/")[-1]] = dict(
            seeds=len(scores), is_mean=_mean_std(s.is_mean for s in scores)[0],
            fid=_mean_std(s.fid for s in scores)[0], acc=_mean_std(s.accuracy for s in scores)[0])
    return out
