"""The study's answer, each number with the rule that produced it:

- two comparisons of the baseline batch with the target batch (the config's StudyComparison,
  64 -> 512 in the reference study): at equal generator steps (the paper's) and, where control
  points exist, at equal images seen;
- for each: Welch intervals (primary), the exact test with enough seeds, the paired interval as
  a sensitivity analysis, and verdicts (IS primary; FID and accuracy secondary, Holm-adjusted);
- trends over batch size, the seed-to-seed noise floor beside the evaluation noise, and whether
  each learning curve had flattened by its last evaluation.
"""
from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from experiments.config import StudyComparison
from experiments.records import Point, PointRecord
from experiments.reporting import environments
from experiments.reporting.lib import plots
from experiments.reporting.lib import stats as statistics
from experiments.reporting.lib.markdown import change, change_interval, number, plus_minus, table
from experiments.reporting.lib.metrics import COMPARED, METRICS, PRIMARY, MeanSd, describe
from experiments.reporting.lib.seeds import (
    EQUAL_IMAGES,
    EQUAL_STEPS,
    budget,
    final_value,
    paired_vs_baseline,
    ratio_vs_baseline,
    replicate_values,
    seed_values,
    split_by_budget,
)
from experiments.reporting.sections import json_values

KEY, ORDER = "verdicts", 20
PAPER_IS_CHANGE = 50.0  # TF-Replicator (arXiv 1902.00465): IS +~50% from batch 64 to 512
NAMES = {k: METRICS[k].label for k in COMPARED}
SECONDARY = tuple(k for k in COMPARED if k != PRIMARY)
EQUAL_IMAGES_FIGURE = "equal_images.png"
LABELS = {EQUAL_STEPS: "equal steps (the paper's)", EQUAL_IMAGES: "equal images"}
SHORT = {EQUAL_STEPS: "at equal steps", EQUAL_IMAGES: "at equal images"}
SIZE = "{size} the paper's {paper:+.0f}%"
TEXT = ("{name} (batch {baseline} -> {target}, {label}): direction {direction}; size {size}; "
        "ours {change}, df {df}, Holm-adjusted p {holm}. Rule: {rule}.")
NO_CONTROLS = ("No equal-images control points in this sweep (batch {baseline} points with "
               "sweep_budget 'equal_images'): the equal-images comparison is not available.")
NO_MATCH = ("Equal-images control points exist, but no batch-{target} point saw the same "
            "{images:,} images: the comparison is not available.")


@dataclass(frozen=True)
class Arm:
    batch: int
    steps: int
    images_seen: int
    seeds: list[int]
    scores: dict[str, MeanSd]  # by metric; analysis.json lists them beside the fields

    def to_dict(self) -> dict:
        return dict(batch=self.batch, steps=self.steps, images_seen=self.images_seen,
                    seeds=self.seeds, **self.scores)


@dataclass(frozen=True)
class MetricTests:
    interval: statistics.RatioInterval  # Welch, the primary interval
    exact: statistics.ExactTest
    paired: statistics.RatioInterval | None  # the sensitivity analysis
    holm_p: float | None  # secondary metrics only


@dataclass(frozen=True)
class MetricVerdict:
    metric: str
    name: str
    primary: bool
    direction: statistics.Direction
    size: str | None  # SIZE, where the paper's change lies against our interval
    rule: statistics.Rule
    text: str  # TEXT: the verdict as one fixed line


@dataclass(frozen=True)
class Comparison:
    name: str  # its budget: EQUAL_STEPS or EQUAL_IMAGES
    label: str
    baseline: Arm
    target: Arm
    metrics: dict[str, MetricTests]
    verdicts: list[MetricVerdict]
    environments: str


@dataclass(frozen=True)
class SeedSpread:
    """Coefficients of variation over training seeds, per batch size: the noise floor a
    difference between batch sizes must clear."""
    batch_sizes: int
    median_cv: float
    min_cv: float
    max_cv: float
    cv_by_batch: dict[str, float]


@dataclass(frozen=True)
class EvaluationNoise:
    """Coefficients of variation of one checkpoint over evaluation seeds, across points."""
    points: int
    median_cv: float
    max_cv: float


@dataclass(frozen=True)
class CurveEnd:
    seed: int
    from_step: int
    to_step: int
    is_change: float  # over the last evaluation interval
    flattened: bool | None  # |is_change| <= the seed sd of the final IS; None: one seed


@dataclass(frozen=True)
class Plateau:
    budget: str
    batch: int
    steps: int
    seed_sd: float | None
    curves: list[CurveEnd]


@dataclass(frozen=True)
class SignalAndNoise:
    baseline_batch: int
    target_batch: int | None  # None: no comparison
    comparisons: list[Comparison]
    equal_images_note: str | None  # NO_CONTROLS or NO_MATCH where that comparison is missing
    trends: dict[str, statistics.Trend]
    seed_spread: dict[str, SeedSpread | None]
    evaluation_noise: dict[str, EvaluationNoise | None]
    plateau: list[Plateau]


def _done(points: list[Point]) -> list[Point]:
    return [p for p in points if p.record.status == "done"]


def _arm(records: list[PointRecord]) -> Arm:
    r = records[0]
    return Arm(r.global_batch_size, r.steps, r.images_seen, sorted(r.seed for r in records),
               {m: describe(final_value(r, m) for r in records).mean_sd for m in NAMES})


def compare(name: str, base: list[PointRecord], other: list[PointRecord]) -> Comparison:
    """Every statistic of one comparison; `name` is its budget (EQUAL_STEPS or EQUAL_IMAGES)."""
    intervals = {m: ci for m in NAMES if (ci := ratio_vs_baseline(base, other, m)) is not None}
    adjusted = statistics.holm({m: intervals[m].p_value for m in SECONDARY
                                if m in intervals and intervals[m].p_value is not None})
    tests, verdicts = {}, []
    for metric, ci in intervals.items():
        a, b = seed_values(base, metric), seed_values(other, metric)
        tests[metric] = MetricTests(ci, statistics.exact_test(list(a.values()), list(b.values())),
                                    paired_vs_baseline(base, other, metric), adjusted.get(metric))
        primary = metric == PRIMARY
        paper = PAPER_IS_CHANGE if primary and name == EQUAL_STEPS else None
        v = statistics.verdict(ci, METRICS[metric].higher_is_better, (len(a), len(b)), paper,
                               None if primary else adjusted.get(metric))
        size = v.size and SIZE.format(size=v.size.value, paper=paper)
        text = TEXT.format(name=NAMES[metric], baseline=base[0].global_batch_size,
                           target=other[0].global_batch_size, label=SHORT[name],
                           direction=v.direction.value, size=size or "-",
                           change=change_interval(ci), df=number(ci.df, ".1f"),
                           holm=number(adjusted.get(metric), ".2g"), rule=v.rule.value)
        verdicts.append(MetricVerdict(metric, NAMES[metric], primary, v.direction, size, v.rule,
                                      text))
    return Comparison(name, LABELS[name], _arm(base), _arm(other), tests, verdicts,
                      environments.line(base + other))


def equal_images_arms(controls: list[Point], table_points: list[Point], baseline: int,
                      target: int) -> tuple[list[Point], list[Point]]:
    """Baseline-batch controls of the most common images seen, and the target-batch points that
    saw as many (a labelled control wins a seed's slot); ([], []) without controls."""
    base = [p for p in _done(controls) if p.record.global_batch_size == baseline]
    seen = [p.record.images_seen for p in base]
    images = max(set(seen), key=seen.count) if seen else None
    other = {p.record.seed: p for p in _done(table_points) + _done(controls)
             if (p.record.global_batch_size, p.record.images_seen) == (target, images)}
    return [p for p in base if p.record.images_seen == images], list(other.values())


def equal_images_comparison(controls: list[Point], table_points: list[Point], baseline: int,
                            target: int) -> Comparison | str:
    """The equal-images comparison, or the note (NO_CONTROLS, NO_MATCH) saying why not."""
    base, other = equal_images_arms(controls, table_points, baseline, target)
    if not base:
        return NO_CONTROLS.format(baseline=baseline)
    if not other:
        return NO_MATCH.format(target=target, images=base[0].record.images_seen)
    return compare(EQUAL_IMAGES, [p.record for p in base], [p.record for p in other])


def signal_and_noise(points: list[Point], baseline: int, target: int) -> SignalAndNoise:
    """Every comparison, trend and noise floor of the budget points (one precision)."""
    table_points, controls = split_by_budget(points)
    done = [p.record for p in _done(table_points)]
    trends = {}
    for metric in NAMES:
        pairs = [(r.global_batch_size, final_value(r, metric)) for r in done]
        try:
            trends[metric] = statistics.trend_test(
                *zip(*((b, v) for b, v in pairs if v is not None and math.isfinite(v))), baseline)
        except (ValueError, TypeError):  # too few points for a trend
            pass
    batches = sorted({r.global_batch_size for r in done})
    target = target if target in batches else (max(batches) if batches else None)
    comparisons, note = [], None
    if baseline in batches and target is not None and target != baseline:
        comparisons.append(compare(budget(done[0]),
                                   [r for r in done if r.global_batch_size == baseline],
                                   [r for r in done if r.global_batch_size == target]))
        if budget(done[0]) == EQUAL_STEPS:  # (a sweep wholly at equal images has no controls)
            found = equal_images_comparison(controls, table_points, baseline, target)
            comparisons += [found] if isinstance(found, Comparison) else []
            note = found if isinstance(found, str) else None
    return SignalAndNoise(baseline, target if comparisons else None, comparisons, note, trends,
                          {m: seed_spread(done, m) for m in NAMES},
                          {m: evaluation_noise(done, m) for m in NAMES}, plateau(points))


def analyse(points: list[Point], baseline: int | None = None, target: int | None = None
            ) -> dict:
    """signal_and_noise as analysis.json holds it (None: StudyComparison's batches)."""
    return json_values(signal_and_noise(points, baseline or StudyComparison().baseline_batch,
                                    target or StudyComparison().target_batch))


def seed_spread(done: list[PointRecord], metric: str) -> SeedSpread | None:
    by_batch = defaultdict(list)
    for r in done:
        by_batch[r.global_batch_size].append(final_value(r, metric))
    cvs = {str(b): cv for b, v in sorted(by_batch.items())
           if (cv := describe(v).cv) is not None}
    v = list(cvs.values())
    return SeedSpread(len(v), float(np.median(v)), min(v), max(v), cvs) if cvs else None


def evaluation_noise(done: list[PointRecord], metric: str) -> EvaluationNoise | None:
    cvs = [cv for r in done if (cv := describe(replicate_values(r, metric)).cv) is not None]
    return EvaluationNoise(len(cvs), float(np.median(cvs)), float(np.max(cvs))) if cvs else None


def plateau(points: list[Point]) -> list[Plateau]:
    """Per curve (budget, batch): did each seed's last evaluation interval change IS by more
    than the seed-to-seed spread of the final IS? A curve within the spread had flattened;
    one beyond it was still changing. Nothing here says 'converged'."""
    groups = defaultdict(list)
    for p in _done(points):
        groups[(budget(p.record), p.record.global_batch_size, p.record.steps)].append(p)
    out = []
    for (name, batch, steps), group in sorted(groups.items()):
        sd = describe(p.record.final.is_mean for p in group).sd
        curves = []
        for p in sorted(group, key=lambda p: p.record.seed):
            h = sorted((e for e in p.history if e.step is not None), key=lambda e: e.step)
            if len(h) > 1:
                d = h[-1].is_mean - h[-2].is_mean
                curves.append(CurveEnd(p.record.seed, h[-2].step, h[-1].step, d,
                                       None if sd is None else bool(abs(d) <= sd)))
        if curves:
            out.append(Plateau(name, batch, steps, sd, curves))
    return out


# -- Markdown: tables and fixed templates -----------------------------------------------------
INTRO = ("Intervals: 95% Welch t-intervals on log values (seeds as independent runs), around the "
         "ratio of geometric means; df = Welch-Satterthwaite degrees of freedom. IS is the "
         "primary metric, judged by its interval; FID and accuracy are secondary, judged by "
         "Holm-adjusted p-values over the two of them. All three come from one classifier's "
         "outputs, so they are not three independent confirmations. At equal images, "
         "'reproduced' means the larger batch still scores better having seen the same images. "
         "Exact test: Mann-Whitney U, two-sided, run where the seeds can reach p < 0.05. Paired: "
         "seed k with seed k (they share initial weights and data order; pairing is a modelling "
         "choice), a sensitivity analysis.")
NO_COMPARISON = "No verdict: it needs finished points at batch {baseline} and a larger batch."
HEADING = "### {label}: batch {a.batch} x {a.steps:,} steps vs batch {b.batch} x {b.steps:,} steps"
TREND_NOTE = ("Spearman p: Monte Carlo over {resamples:,} random orderings ('≤': none reached "
              "the observed rho, so a bound); batch means: exact, over every ordering. Lines: log "
              "value against log2(batch), the intervals' scale.")
NOISE_NOTE = ("Coefficients of variation. Seed-to-seed: the noise floor a difference between "
              "batch sizes must clear. Evaluation seeds: one checkpoint scored again, a "
              "separate, smaller floor.")
PLATEAU_NOTE = ("A curve whose last interval changed IS by more than the seed-to-seed spread of "
                "the final IS had not flattened; none is called converged.")
YES_NO = {None: "-", True: "yes", False: "no"}


def _comparison(c: Comparison) -> list[str]:
    arms = [[f"batch {a.batch} x {a.steps:,}", f"{a.images_seen:,}", ", ".join(map(str, a.seeds)),
             *(plus_minus(a.scores[m].mean, a.scores[m].sd, METRICS[m].fmt) for m in NAMES)]
            for a in (c.baseline, c.target)]
    rows, rules = [], defaultdict(list)
    for v in c.verdicts:
        t = c.metrics[v.metric]
        rules[v.rule.value].append(v.name)
        rows.append([f"**{v.name}**" if v.primary else v.name, v.direction.value, v.size or "-",
                     change_interval(t.interval), number(t.interval.df, ".1f"),
                     number(t.holm_p, ".2g"), number(t.exact.u, ".0f"),
                     number(t.exact.p_value, "#.2g"), number(t.exact.smallest_p, "#.2g"),
                     change_interval(t.paired) if t.paired else "-"])
    return [HEADING.format(label=c.label.capitalize(), a=c.baseline, b=c.target), "",
            table(["arm", "images seen", "seeds", *NAMES.values()], arms), "",
            table(["metric", "direction", "size", "change [95% CI]", "df", "Holm-adjusted p",
                   "exact U", "exact p", "smallest exact p", "paired [95% CI]"], rows), "",
            *(f"- Rule for {', '.join(names)}: {rule}." for rule, names in rules.items()), "",
            c.environments, ""]


def _trends(trends: dict[str, statistics.Trend]) -> list[str]:
    rho = [[NAMES[m], str(t.n), f"{t.spearman_rho:+.2f}",
            ("≤ " if t.spearman_p_at_floor else "") + number(t.spearman_p, "#.2g"), str(t.means_n),
            number(t.means_rho, "+.2f"), number(t.means_p, "#.2g")] for m, t in trends.items()]
    lines = [[NAMES[m], f.span, f"{change(math.exp(f.slope))} [{change(math.exp(f.slope_low))}, "
              f"{change(math.exp(f.slope_high))}]", number(f.lack_of_fit_p, "#.2g"),
              YES_NO[f.fits]] for m, t in trends.items() for f in t.lines]
    return ["### Trend over batch size", "",
            table(["metric", "points", "Spearman rho", "p", "batch sizes", "rho of means",
                   "exact p"], rho), "",
            table(["metric", "batches", "per doubling [95% CI]", "lack-of-fit p", "a line fits"],
                  lines), "", TREND_NOTE.format(resamples=statistics.RESAMPLES), ""]


def _noise(result: SignalAndNoise) -> list[str]:
    def pct(x, spec=".1f"):
        return "-" if x is None else f"{100 * x:{spec}}%"
    rows = [[NAMES[m], pct(s and s.median_cv), f"{pct(s and s.min_cv)} - {pct(s and s.max_cv)}",
             number(s and s.batch_sizes, "d"), pct(e and e.median_cv, ".2f"),
             pct(e and e.max_cv, ".2f"), number(e and e.points, "d")]
            for m in NAMES for s, e in [(result.seed_spread[m], result.evaluation_noise[m])]]
    return ["### Noise", "", table(["metric", "seed-to-seed median", "range", "batch sizes",
                                    "evaluation seeds median", "max", "points"], rows), "",
            NOISE_NOTE, ""]


def _plateau(groups: list[Plateau]) -> list[str]:
    rows = [[f"{g.batch} x {g.steps:,}", SHORT[g.budget],
             f"{g.curves[0].from_step:,} -> {g.curves[0].to_step:,}",
             ", ".join(f"{c.is_change:+.2f}" for c in g.curves), number(g.seed_sd),
             number(None if g.seed_sd is None else sum(c.flattened for c in g.curves), "d")
             + f" of {len(g.curves)}",
             ", ".join(str(c.seed) for c in g.curves if c.flattened) or "-"] for g in groups]
    return ["### Plateau (the last evaluation interval against the seed spread)", "",
            table(["batch x steps", "budget", "steps", "IS change per seed", "seed sd",
                   "flattened", "flattened seeds"], rows), "", PLATEAU_NOTE, ""]


def compute(study, earlier: dict) -> SignalAndNoise:
    c = study.comparison
    return signal_and_noise(study.compared, c.baseline_batch, c.target_batch)


def render(result: SignalAndNoise, study) -> str:
    lines = ["## Signal and noise", "", INTRO, ""]
    if not result.comparisons:
        lines += [NO_COMPARISON.format(baseline=result.baseline_batch), ""]
    for c in result.comparisons:
        lines += _comparison(c)
    if result.equal_images_note:
        lines += ["### Equal images", "", result.equal_images_note, ""]
    lines += _trends(result.trends) if result.trends else []
    lines += _noise(result) + (_plateau(result.plateau) if result.plateau else [])
    return "\n".join(lines)


def draw(result: SignalAndNoise, study) -> None:
    """The figure of the equal-images comparison, when the analysis found one."""
    if any(c.name == EQUAL_IMAGES for c in result.comparisons[1:]):
        arms = equal_images_arms(study.controls, study.table_points, result.baseline_batch,
                                 result.target_batch)
        plots.equal_images_curves([sorted(arm, key=lambda p: p.record.seed) for arm in arms],
                                  os.path.join(study.out_dir, EQUAL_IMAGES_FIGURE))
