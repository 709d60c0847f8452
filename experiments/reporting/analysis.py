"""The study's answer: trends over batch size, the evaluation-noise floor, and one verdict per
metric on the paper's comparison (batch 64 -> 512), each with the rule that produced it."""
from __future__ import annotations

import math

import numpy as np

from experiments.config import BASELINE_BATCH
from experiments.records import Point
from experiments.reporting import statistics
from experiments.reporting.summary import METRICS, final_value, ratio_vs_baseline, replicate_values

TARGET_BATCH = 512  # the paper's "64 -> 512"
PAPER_IS_CHANGE = 50.0  # TF-Replicator (arXiv 1902.00465): IS +~50% from batch 64 to 512
NAMES = {"is": "IS", "fid": "FID", "acc": "conditional accuracy"}


def analyse(points: list[Point]) -> dict:
    done = [p.record for p in points if p.record.status == "done"]
    out = dict(trends={}, noise_floor={}, verdicts=[], target_batch=None)
    for metric in ("is", "fid", "acc"):
        pairs = [(r.global_batch_size, final_value(r, metric)) for r in done]
        pairs = [(b, v) for b, v in pairs if v is not None and math.isfinite(v)]
        try:
            out["trends"][metric] = statistics.trend_test(*zip(*pairs)).to_dict()
        except (ValueError, TypeError):  # too few points for a trend
            pass
        cvs = []
        for r in done:
            values = replicate_values(r, metric)
            if len(values) > 1:
                cvs.append(statistics.noise_floor(values).cv)
        if cvs:
            out["noise_floor"][metric] = dict(points=len(cvs),
                                              median_cv=float(np.median(cvs)),
                                              max_cv=float(np.max(cvs)))
    batches = sorted({r.global_batch_size for r in done})
    target = TARGET_BATCH if TARGET_BATCH in batches else (max(batches) if batches else None)
    if BASELINE_BATCH not in batches or target is None or target == BASELINE_BATCH:
        return out
    out["target_batch"] = target
    base = [r for r in done if r.global_batch_size == BASELINE_BATCH]
    other = [r for r in done if r.global_batch_size == target]
    for metric in ("is", "fid", "acc"):
        ci = ratio_vs_baseline(base, other, metric)
        if ci is None:
            continue
        v = statistics.verdict(NAMES[metric], ci, METRICS[metric][1],
                               PAPER_IS_CHANGE if metric == "is" else None)
        text = v.text.replace("64 -> 512", f"64 -> {target}", 1)
        out["verdicts"].append(dict(metric=metric, outcome=v.outcome, text=text,
                                    interval=ci.to_dict()))
    return out


def analysis_markdown(result: dict) -> str:
    lines = ["## Signal and noise", ""]
    for v in result["verdicts"]:
        lines.append(f"- **{v['text']}**")
    if not result["verdicts"]:
        lines.append(f"- No verdict: it needs finished points at batch {BASELINE_BATCH} and "
                     f"a larger batch.")
    for metric, t in result["trends"].items():
        lines.append(
            f"- Trend of {NAMES[metric]} over log2(batch), all seeds pooled (n = {t['n']}): "
            f"Spearman rho {t['spearman_rho']:+.2f} (p = {t['spearman_p']:.2g}); slope "
            f"{t['slope_per_doubling']:+.3g} per doubling [95% CI {t['slope_low']:+.3g}, "
            f"{t['slope_high']:+.3g}].")
    for metric, nf in result["noise_floor"].items():
        lines.append(
            f"- Evaluation-noise floor of {NAMES[metric]} (same checkpoint, several evaluation "
            f"seeds, {nf['points']} points): median coefficient of variation "
            f"{100 * nf['median_cv']:.2f}% (max {100 * nf['max_cv']:.2f}%).")
    return "\n".join(lines) + "\n"
