"""One row per global batch size: final and best scores over seeds, and ratios to batch 64
with 95% intervals (see statistics.py for how they are computed)."""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from experiments.config import BASELINE_BATCH
from experiments.records import Point, PointRecord
from experiments.reporting import statistics

# metric -> (Scores field, higher is better)
METRICS = {"is": ("is_mean", True), "fid": ("fid", False), "kid": ("kid_mean", False),
           "acc": ("accuracy", True), "intra_fid": ("intra_fid", False),
           "precision": ("precision", True), "recall": ("recall", True)}
RATIO_METRICS = ("is", "fid", "acc")


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


def ratio_vs_baseline(base: list[PointRecord], other: list[PointRecord], metric: str):
    """RatioInterval of `other` over `base` (batch 64), or None where it cannot be formed."""
    a = {r.seed: final_value(r, metric) for r in base if r.status == "done"}
    b = {r.seed: final_value(r, metric) for r in other if r.status == "done"}
    a = {s: v for s, v in a.items() if v is not None and math.isfinite(v)}
    b = {s: v for s, v in b.items() if v is not None and math.isfinite(v)}
    if not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        ra = replicate_values(next(r for r in base if r.seed in a), metric)
        rb = replicate_values(next(r for r in other if r.seed in b), metric)
        return statistics.ratio_interval(ra, rb, paired=False,
                                         one_seed_replicates=len(ra) > 1 and len(rb) > 1)
    if set(a) == set(b):
        seeds = sorted(a)
        return statistics.ratio_interval([a[s] for s in seeds], [b[s] for s in seeds],
                                         paired=True)
    return statistics.ratio_interval(list(a.values()), list(b.values()), paired=False)


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
            key = "is" if metric == "is" else metric
            row[f"{key}_change_vs_64"] = None if ci is None else 100.0 * (ci.ratio - 1.0)
            row[f"{key}_ratio_ci"] = None if ci is None else ci.to_dict()
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
