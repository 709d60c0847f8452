"""Points of different train.precision never share a comparison; the precision check compares
them with each other instead.

The report's tables and statistics take the points of one precision (float32 where there are
any; study.py splits them) and leave the others out, saying so in one line. The check pairs each
batch size's reduced-precision points with the float32 points of the same seeds and
settings (steps, budget, learning rate) and gives, per metric, the Welch interval of the
ratio and whether the shift exceeds the float32 seeds' own spread (their standard deviation),
the yardstick a reader of the study's tables already uses.
"""
from __future__ import annotations

import math
from collections import defaultdict

from experiments.records import Point
from experiments.reporting import study as study_lib
from experiments.reporting.lib import seeds as summary
from experiments.reporting.lib.metrics import COMPARED, METRICS, describe

KEY, ORDER = "precision_check", 40
MAIN_PRECISION = study_lib.MAIN_PRECISION
precision_of = study_lib.precision_of


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
    d = describe(values)
    return d.mean, d.sd


def check(points: list[Point]) -> list[dict]:
    """Every metric of every pair: means, float32 seed spread, Welch ratio interval, verdict."""
    rows = []
    for pair in pairs(points):
        for metric in COMPARED:
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


def compute(study, earlier: dict) -> list[dict] | None:
    """Every pair's rows; None when the directory holds one precision only."""
    if len({precision_of(p) for p in study.budget_points}) <= 1:
        return None
    return check(study.budget_points)


def render(rows: list[dict], study) -> str:
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
        fmt = METRICS[r["metric"]].fmt
        ci = r["interval"]
        ratio = ("-" if ci is None else f"{ci['ratio']:.3f}" + (
            f" [{ci['low']:.3f}, {ci['high']:.3f}]" if not math.isnan(ci["low"]) else ""))
        verdict = {None: "-", True: "yes", False: "no"}[r["beyond_seed_spread"]]
        if r["beyond_seed_spread"]:
            moved.append(f"{METRICS[r['metric']].label} at batch {r['batch']}")
        lines.append(f"| {r['precision']} | {r['batch']} x {r['steps']:,} | "
                     f"{len(r['seeds'])} | {METRICS[r['metric']].label} | "
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
