"""Points of different train.precision never share a comparison; the precision check compares
them with each other instead.

The report's tables and statistics take the points of one precision (float32 where there are
any; study.py splits them). The check pairs each batch size's reduced-precision points with the
float32 points of the same seeds and settings (steps, budget, learning rate) and gives, per
metric, the Welch interval of the ratio and whether the shift exceeds the float32 seeds' own
spread (their standard deviation), the yardstick a reader of the study's tables already uses.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from experiments.records import Point
from experiments.reporting.lib import seeds
from experiments.reporting.lib.markdown import number, plus_minus, table
from experiments.reporting.lib.metrics import COMPARED, METRICS, describe
from experiments.reporting.lib.stats import RatioInterval
from experiments.reporting.study import MAIN_PRECISION, precision_of

KEY, ORDER = "precision_check", 40
NO_TWINS = ("Points of another precision exist, but none has a finished float32 twin (same "
            "batch, steps, schedule and seed): no comparison yet.")
INTRO = ("Final scores of the same seeds and settings in each precision; ratio = reduced over "
         "float32 with its 95% Welch interval; 'beyond the seed spread' when the means differ by "
         "more than the float32 seeds' standard deviation ('-': one float32 seed, no spread).")
COUNTS = ("Beyond the float32 seed spread: {yes} of {judged} rows that can be judged ({n} rows). "
          "The study's comparisons keep float32.")


@dataclass(frozen=True)
class PrecisionShift:
    """One metric of one batch size: float32 against reduced precision over common seeds."""
    precision: str
    batch: int
    steps: int
    seeds: list[int]
    metric: str
    float32_mean: float
    float32_sd: float | None
    mean: float
    sd: float | None
    interval: RatioInterval | None
    beyond_seed_spread: bool | None  # None: one float32 seed, no spread to judge by


def _settings(point: Point) -> tuple:
    t = point.config.train
    return (t.global_batch_size, t.steps, t.lr_decay_start, t.g_lr, t.d_lr, t.n_dis,
            seeds.budget(point.record))


def check(points: list[Point]) -> list[PrecisionShift]:
    """Every metric of every (reduced precision, settings) with float32 twins of common seeds."""
    groups = defaultdict(dict)
    for p in points:
        if p.record.status == "done":
            groups[_settings(p), precision_of(p)][p.record.seed] = p.record
    out = []
    for (settings, precision), reduced in sorted(groups.items(), key=lambda kv: str(kv[0])):
        base = groups.get((settings, MAIN_PRECISION), {})
        common = sorted(set(base) & set(reduced))
        if precision == MAIN_PRECISION or not common:
            continue
        a, b = [base[s] for s in common], [reduced[s] for s in common]
        for metric in COMPARED:
            d32 = describe(seeds.final_value(r, metric) for r in a)
            d = describe(seeds.final_value(r, metric) for r in b)
            if d32.mean is None or d.mean is None:
                continue
            out.append(PrecisionShift(
                precision, settings[0], settings[1], common, metric, d32.mean, d32.sd, d.mean,
                d.sd, seeds.ratio_vs_baseline(a, b, metric),
                None if d32.sd is None else abs(d.mean - d32.mean) > d32.sd))
    return out


def compute(study, earlier: dict) -> list[PrecisionShift] | None:
    """None when the directory holds one precision only."""
    if len({precision_of(p) for p in study.budget_points}) <= 1:
        return None
    return check(study.budget_points)


def render(rows: list[PrecisionShift], study) -> str:
    cells = [[r.precision, f"{r.batch} x {r.steps:,}", str(len(r.seeds)),
              METRICS[r.metric].label,
              plus_minus(r.float32_mean, r.float32_sd, METRICS[r.metric].fmt),
              plus_minus(r.mean, r.sd, METRICS[r.metric].fmt),
              "-" if r.interval is None else f"{number(r.interval.ratio, '.3f')} "
              f"[{number(r.interval.low, '.3f')}, {number(r.interval.high, '.3f')}]",
              {None: "-", True: "yes", False: "no"}[r.beyond_seed_spread]] for r in rows]
    judged = [r.beyond_seed_spread for r in rows if r.beyond_seed_spread is not None]
    return "\n".join(["## Precision check", "", INTRO, "", table(
        ["precision", "batch x steps", "seeds", "metric", "float32", "reduced", "ratio [95% CI]",
         "beyond the seed spread"], cells), "",
        COUNTS.format(yes=sum(judged), judged=len(judged), n=len(rows)) if rows else NO_TWINS,
        ""])
