"""Points of different train.precision never share a comparison; the precision check compares
them with each other instead.

The report's tables and statistics take the float32 points (every committed comparison was
made in float32) and leave the others out, saying so in one line. The check pairs each
batch size's reduced-precision points with the float32 points of the same seeds and
settings (steps, budget, learning rate) and gives, per metric, the Welch interval of the
ratio and whether the shift exceeds the float32 seeds' own spread (their standard deviation),
the yardstick a reader of the study's tables already uses.
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from experiments.records import Point
from experiments.reporting.lib import seeds as summary

MAIN_PRECISION = "float32"
NAMES = {"is": "IS", "fid": "FID", "acc": "conditional accuracy"}
FORMATS = {"is": ".3f", "fid": ".1f", "acc": ".3f"}


def precision_of(point: Point) -> str:
    return getattr(point.config.train, "precision", MAIN_PRECISION)


def split_by_precision(points: list[Point]) -> tuple[list[Point], str | None]:
    """(the points the report's comparisons use, the one line saying what was left out).

    float32 where any point is float32, else the precision most points have."""
    counts = defaultdict(int)
    for p in points:
        counts[precision_of(p)] += 1
    if len(counts) <= 1:
        return list(points), None
    main = MAIN_PRECISION if MAIN_PRECISION in counts else max(counts, key=counts.get)
    kept = [p for p in points if precision_of(p) == main]
    left = ", ".join(f"{n} in {name}" for name, n in sorted(counts.items()) if name != main)
    return kept, (f"Points of another precision ({left}) are left out of these comparisons, "
                  f"which use the {main} points only (a comparison never mixes precisions); "
                  "the precision check compares them with their float32 twins.")


def _settings(point: Point) -> tuple:
    t = point.config.train
    return (t.global_batch_size, t.steps, t.lr_decay_start, t.g_lr, t.d_lr, t.n_dis,
            summary.budget(point.record))


def pairs(points: list[Point]) -> list[dict]:
    """Per (reduced precision, settings): the float32 and reduced records of common seeds."""
    done = [p for p in points if p.record.status == "done"]
    groups = defaultdict(dict)
    for p in done:
        groups[_settings(p), precision_of(p)][p.record.seed] = p.record
    out = []
    for (settings, precision), reduced in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if precision == MAIN_PRECISION:
            continue
        base = groups.get((settings, MAIN_PRECISION), {})
        seeds = sorted(set(base) & set(reduced))
        if seeds:
            out.append(dict(precision=precision, batch=settings[0], steps=settings[1],
                            seeds=seeds, base=[base[s] for s in seeds],
                            other=[reduced[s] for s in seeds]))
    return out


def _mean_sd(values):
    v = [x for x in values if x is not None and math.isfinite(x)]
    return (float(np.mean(v)) if v else None,
            float(np.std(v, ddof=1)) if len(v) > 1 else None)


def check(points: list[Point]) -> list[dict]:
    """Every metric of every pair: means, float32 seed spread, Welch ratio interval, verdict."""
    rows = []
    for pair in pairs(points):
        for metric in NAMES:
            m32, sd32 = _mean_sd([summary.final_value(r, metric) for r in pair["base"]])
            m16, sd16 = _mean_sd([summary.final_value(r, metric) for r in pair["other"]])
            if m32 is None or m16 is None:
                continue
            ci = summary.ratio_vs_baseline(pair["base"], pair["other"], metric)
            moved = None if sd32 is None else abs(m16 - m32) > sd32
            rows.append(dict(precision=pair["precision"], batch=pair["batch"],
                             steps=pair["steps"], seeds=pair["seeds"], metric=metric,
                             float32_mean=m32, float32_sd=sd32, mean=m16, sd=sd16,
                             interval=None if ci is None else ci.to_dict(),
                             beyond_seed_spread=moved))
    return rows


def _cell(mean, sd, fmt):
    return format(mean, fmt) + (f" ± {format(sd, fmt)}" if sd is not None else "")


def precision_check_markdown(points: list[Point]) -> str:
    """The report's section; '' when the directory holds one precision only."""
    rows = check(points)
    if not rows and len({precision_of(p) for p in points}) <= 1:
        return ""
    lines = ["## Precision check", ""]
    if not rows:
        return "\n".join(lines + [
            "Points of another precision exist, but none has a finished float32 twin (same "
            "batch, steps, schedule and seed): no comparison yet.", ""])
    lines += ["Final scores of the same seeds and settings in each precision; ratio = reduced "
              "over float32 with its 95% Welch interval; 'beyond the seed spread' when the "
              "means differ by more than the float32 seeds' standard deviation.", "",
              "| precision | batch x steps | seeds | metric | float32 | reduced | ratio "
              "[95% CI] | beyond the seed spread |", "|---|---|---|---|---|---|---|---|"]
    moved = []
    for r in rows:
        fmt = FORMATS[r["metric"]]
        ci = r["interval"]
        ratio = ("-" if ci is None else f"{ci['ratio']:.3f}" + (
            f" [{ci['low']:.3f}, {ci['high']:.3f}]" if not math.isnan(ci["low"]) else ""))
        verdict = {None: "-", True: "yes", False: "no"}[r["beyond_seed_spread"]]
        if r["beyond_seed_spread"]:
            moved.append(f"{NAMES[r['metric']]} at batch {r['batch']}")
        lines.append(f"| {r['precision']} | {r['batch']} x {r['steps']:,} | "
                     f"{len(r['seeds'])} | {NAMES[r['metric']]} | "
                     f"{_cell(r['float32_mean'], r['float32_sd'], fmt)} | "
                     f"{_cell(r['mean'], r['sd'], fmt)} | {ratio} | {verdict} |")
    lines.append("")
    # one float32 seed has no spread: such rows ('-') are not called unmoved
    judged = sum(r["beyond_seed_spread"] is not None for r in rows)
    if moved:
        lines.append(f"Reduced precision moves {', '.join(moved)} by more than the seed "
                     "spread: the study keeps float32 for its comparisons.")
    elif judged:
        lines.append("No score moves by more than the float32 seeds' spread." + (
            "" if judged == len(rows) else " Rows marked '-' have one float32 seed, so no "
            "spread to judge them by."))
    else:
        lines.append("No shift can be judged: each comparison has one float32 seed, so no "
                     "seed spread to measure it against.")
    return "\n".join(lines + [""])
