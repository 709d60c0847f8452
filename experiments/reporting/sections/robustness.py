"""Does the answer depend on the extractor? Every scored final generator under each feature
extractor that scored it, with its classification accuracy score (CAS) and memorisation
fractions, beside the real-data rows (SWEEP/real_rows/*.json, written by `real-row --out`).

Numbers only: per arm and batch the seed mean and sd; the baseline -> target change with its
Welch interval under each extractor; the batch ranking's agreement between extractors
(Spearman's rho with its exact p). What they mean is written in docs/study.md.
"""
from __future__ import annotations

import glob
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from experiments import grids
from experiments.pyplot import plt
from experiments.records import Point, RealRow
from experiments.reporting.lib import markdown
from experiments.reporting.lib import stats as statistics
from experiments.reporting.lib.metrics import Description, describe

KEY, ORDER = "robustness", 80
REAL_ROWS = "real_rows"  # SWEEP/real_rows/PROTOCOL_EXTRACTOR.json
FIGURE = "robustness"
MAIN_ARM = "equal_steps"  # the label of the sweep's unnamed arm here
CHANGED = {True: "interval above 1", False: "interval below 1", None: "interval spans 1"}


@dataclass(frozen=True)
class BatchScores:
    """One arm's points at one batch: `metrics` maps a column to its seed description."""
    arm: str
    batch: int
    steps: int
    metrics: dict[str, Description]


@dataclass(frozen=True)
class Change:
    baseline_arm: str
    baseline_batch: int
    target_arm: str
    target_batch: int
    metric: str  # a column: 'is@EXTRACTOR', 'fid@EXTRACTOR' or 'cas'
    interval: statistics.RatioInterval
    direction: str  # a CHANGED value


@dataclass(frozen=True)
class RankAgreement:
    arm: str
    metric: str  # "is" or "fid"
    batches: int
    rho: float
    p_value: float


@dataclass(frozen=True)
class RealScores:
    extractor: str
    stand_in_split: str
    n_fake: int
    is_mean: float
    fid: float
    accuracy: float | None
    reference_is_mean: float
    cas_ceiling: float | None
    memorisation_threshold: dict[str, float]


@dataclass(frozen=True)
class Robustness:
    extractors: tuple[str, ...]  # the points' own first
    cas_recipe: str | None
    rows: tuple[BatchScores, ...]
    changes: tuple[Change, ...]
    ranks: tuple[RankAgreement, ...]
    real: tuple[RealScores, ...]

    def to_dict(self) -> dict:
        return asdict(self)


def arm_of(point: Point) -> str:
    return point.record.arm or MAIN_ARM


def point_metrics(point: Point, extractors, cas_recipe: str | None) -> dict[str, float]:
    """A point's columns: IS and FID under each extractor, CAS, memorised share per space."""
    rec, out = point.record, {}
    if rec.final is None:
        return out
    proto = rec.final.protocol
    for ext in extractors:
        s = rec.final if ext == proto.classifier else rec.evaluations.get(
            f"{proto.protocol}/{proto.bn_mode}/{ext}")
        if s is not None:
            out[f"is@{ext}"], out[f"fid@{ext}"] = s.is_mean, s.fid
    if cas_recipe in rec.cas:
        out["cas"] = rec.cas[cas_recipe].accuracy
    for m in rec.memorisation.values():
        out[f"memorised@{m.space}"] = m.fraction_closer
    return out


def _extractors(points: list[Point]) -> tuple[str, ...]:
    own = Counter(p.record.final.protocol.classifier for p in points if p.record.final)
    others = Counter(k.split("/")[2] for p in points for k in p.record.evaluations
                     if k.count("/") == 2)
    return tuple(dict.fromkeys([*own, *sorted(others)]))


def rows_of(points: list[Point], extractors, cas_recipe) -> list[BatchScores]:
    groups: dict[tuple[str, int], list[dict]] = {}
    steps: dict[tuple[str, int], int] = {}
    for p in points:
        key = (arm_of(p), p.record.global_batch_size)
        groups.setdefault(key, []).append(point_metrics(p, extractors, cas_recipe))
        steps[key] = max(steps.get(key, 0), p.record.steps)
    out = []
    for key in sorted(groups):
        columns = sorted({c for m in groups[key] for c in m})
        out.append(BatchScores(*key, steps[key], {c: describe([m.get(c) for m in groups[key]])
                                                  for c in columns}))
    return out


def seed_values(points: list[Point], arm: str, batch: int, column: str, extractors,
                cas_recipe) -> list[float]:
    return [v for p in points if arm_of(p) == arm and p.record.global_batch_size == batch
            for v in [point_metrics(p, extractors, cas_recipe).get(column)] if v is not None]


def changes(points, comparisons, columns, extractors, cas_recipe) -> list[Change]:
    out = []
    for (arm_a, batch_a), (arm_b, batch_b) in comparisons:
        for column in columns:
            a = seed_values(points, arm_a, batch_a, column, extractors, cas_recipe)
            b = seed_values(points, arm_b, batch_b, column, extractors, cas_recipe)
            if not a or not b:
                continue
            ci = statistics.welch_ratio(a, b)
            above = None if not ci.has_interval or ci.low <= 1 <= ci.high else ci.low > 1
            out.append(Change(arm_a, batch_a, arm_b, batch_b, column, ci, CHANGED[above]))
    return out


def rank_agreements(rows: list[BatchScores], extractors) -> list[RankAgreement]:
    out = []
    if len(extractors) < 2:
        return out
    first, second = extractors[:2]
    for arm in sorted({r.arm for r in rows}):
        for metric in ("is", "fid"):
            pairs = [(r.metrics[f"{metric}@{first}"].mean, r.metrics[f"{metric}@{second}"].mean)
                     for r in rows if r.arm == arm and f"{metric}@{second}" in r.metrics
                     and f"{metric}@{first}" in r.metrics]
            if len(pairs) < 3:
                continue
            x, y = np.array(pairs).T
            rho = float(stats.spearmanr(x, y).statistic)
            out.append(RankAgreement(arm, metric, len(pairs), rho,
                                     statistics.spearman_p(x, y)))
    return out


def real_rows(sweep_dir: str) -> list[RealScores]:
    out = []
    for path in sorted(glob.glob(os.path.join(sweep_dir, REAL_ROWS, "*.json"))):
        with open(path) as f:
            row = RealRow.from_dict(json.load(f))
        s = row.scores
        out.append(RealScores(s.protocol.classifier, row.stand_in_split, s.n_fake, s.is_mean,
                              s.fid, s.accuracy, row.reference_is_mean,
                              row.cas_ceiling.accuracy if row.cas_ceiling else None,
                              dict(row.memorisation_threshold)))
    return out


def compute(study, earlier: dict) -> Robustness | None:
    points = [p for p in study.points if p.record.final is not None]
    if not any(p.record.cas or p.record.memorisation or
               any(k.count("/") == 2 for k in p.record.evaluations) for p in points):
        return None
    extractors = _extractors(points)
    recipes = Counter(k for p in points for k in p.record.cas)
    recipe = recipes.most_common(1)[0][0] if recipes else None
    rows = rows_of(points, extractors, recipe)
    c = study.comparison
    base, target = c.baseline_batch, c.target_batch
    arms = sorted({r.arm for r in rows if r.batch == target} & {r.arm for r in rows
                                                                if r.batch == base})
    comparisons = [((a, base), (a, target)) for a in arms]
    comparisons += [((a, base), (MAIN_ARM, target)) for a in sorted({r.arm for r in rows})
                    if a not in arms and any(r.arm == a and r.batch == base for r in rows)]
    columns = [f"{m}@{e}" for m in ("is", "fid") for e in extractors] + ["cas"]
    return Robustness(extractors, recipe, tuple(rows),
                      tuple(changes(points, comparisons, columns, extractors, recipe)),
                      tuple(rank_agreements(rows, extractors)), tuple(real_rows(study.sweep_dir)))


def _cell(d: Description | None, spec: str) -> str:
    if d is None or d.mean is None:
        return "-"
    return f"{d.mean:{spec}}" + (f" ± {d.sd:{spec}}" if d.sd is not None else "")


def _columns(result: Robustness) -> list[tuple[str, str, str]]:
    """(column key, header, format) of the per-batch table."""
    spaces = sorted({c.split("@", 1)[1] for r in result.rows for c in r.metrics
                     if c.startswith("memorised@")})
    return ([(f"is@{e}", f"IS {e}", ".2f") for e in result.extractors]
            + [(f"fid@{e}", f"FID {e}", ".0f") for e in result.extractors]
            + [("cas", "CAS", ".3f")]
            + [(f"memorised@{s}", f"memorised ({s})", ".3f") for s in spaces])


def render(result: Robustness, study) -> str:
    cols = _columns(result)
    lines = ["## Robustness: a second extractor, CAS and memorisation", "",
             f"Extractors: {', '.join(result.extractors)} (the first is the points' own). "
             f"CAS recipe: `{result.cas_recipe}`. 'memorised': share of generated images "
             "nearer a training image than the 5th percentile of real test images (about "
             "0.05 for images as novel as unseen real ones, about 1 for copies).", ""]
    if result.real:
        lines += ["Real data in the generator's place (the ceilings):", "", markdown.table(
            ["extractor", "images", "IS", "FID", "accuracy", "reference IS", "CAS ceiling"],
            [[r.extractor, f"{r.n_fake} {r.stand_in_split}", f"{r.is_mean:.2f}",
              f"{r.fid:.2f}", "-" if r.accuracy is None else f"{r.accuracy:.3f}",
              f"{r.reference_is_mean:.2f}",
              "-" if r.cas_ceiling is None else f"{r.cas_ceiling:.3f}"] for r in result.real]),
            ""]
    lines += [markdown.table(
        ["arm", "batch", "steps", "seeds", *(h for _, h, _ in cols)],
        [[r.arm, str(r.batch), str(r.steps), str(max(d.n for d in r.metrics.values())),
          *(_cell(r.metrics.get(k), f) for k, _, f in cols)] for r in result.rows]), ""]
    lines += ["Change of the seed geometric mean (95% Welch interval):", "", markdown.table(
        ["comparison", "metric", "ratio", "interval", "seeds", "reading"],
        [[f"{c.baseline_arm} {c.baseline_batch} -> {c.target_arm} {c.target_batch}", c.metric,
          f"{c.interval.ratio:.3f}", f"[{c.interval.low:.3f}, {c.interval.high:.3f}]",
          f"{c.interval.n_a} vs {c.interval.n_b}", c.direction] for c in result.changes]), ""]
    if result.ranks:
        lines += [f"Batch ranking, {result.extractors[0]} against {result.extractors[1]} "
                  "(seed means):", "", markdown.table(
                      ["arm", "metric", "batches", "Spearman rho", "exact p"],
                      [[r.arm, r.metric, str(r.batches), f"{r.rho:.3f}", f"{r.p_value:.3g}"]
                       for r in result.ranks]), ""]
    lines += [f"![robustness]({FIGURE}.png)", ""]
    return "\n".join(lines)


def draw(result: Robustness, study) -> None:
    """IS under each extractor (relative to the baseline batch), CAS and memorised share
    against batch, one line per arm with at least three batch sizes."""
    arms = [a for a in sorted({r.arm for r in result.rows})
            if len({r.batch for r in result.rows if r.arm == a}) >= 3]
    spaces = sorted({c for r in result.rows for c in r.metrics if c.startswith("memorised@")})
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    base = study.comparison.baseline_batch
    for arm in arms:
        rows = [r for r in result.rows if r.arm == arm]
        batches = [r.batch for r in rows]
        for style, ext in zip(("-", "--"), result.extractors, strict=False):
            ref = next((r.metrics.get(f"is@{ext}") for r in rows if r.batch == base), None)
            ys = [r.metrics.get(f"is@{ext}") for r in rows]
            if ref is None or ref.mean is None or any(y is None for y in ys):
                continue
            axes[0].plot(batches, [y.mean / ref.mean for y in ys], style, marker="o",
                         label=f"{arm}, {ext}")
        cas = [(r.batch, r.metrics["cas"].mean) for r in rows if "cas" in r.metrics]
        if cas:
            axes[1].plot(*zip(*cas), marker="o", label=arm)
        for style, space in zip(("-", "--", ":"), spaces, strict=False):
            mem = [(r.batch, r.metrics[space].mean) for r in rows if space in r.metrics]
            if mem:
                axes[2].plot(*zip(*mem), style, marker="o",
                             label=f"{arm}, {space.split('@', 1)[1]}")
    for r in result.real:
        if r.cas_ceiling is not None:
            axes[1].axhline(r.cas_ceiling, color="grey", lw=0.8, ls=":")
    axes[2].axhline(0.05, color="grey", lw=0.8, ls=":")
    labels = (f"IS / IS at batch {base}", "CAS (real test accuracy)", "memorised share")
    for ax, label in zip(axes, labels, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("global batch size")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    fig.tight_layout()
    grids.save_figure(fig, os.path.join(study.out_dir, FIGURE + ".png"))
