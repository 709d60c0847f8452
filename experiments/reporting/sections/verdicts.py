"""The study's answer, each number with the rule that produced it:

- two comparisons of the baseline batch with the target batch (the config's StudyComparison,
  64 -> 512 in the reference study): at equal generator steps
  (the paper's) and, where control points exist, at equal images seen;
- for each: Welch intervals (primary), the exact test with enough seeds, the paired interval as
  a sensitivity analysis, and verdicts (IS primary; FID and accuracy secondary, Holm-adjusted);
- trends over batch size, the seed-to-seed noise floor beside the evaluation noise, and whether
  each learning curve had flattened by its last evaluation.
"""
from __future__ import annotations

import math
import os
from collections import defaultdict

import numpy as np

from experiments.config import StudyComparison
from experiments.records import Point, PointRecord
from experiments.reporting import environments
from experiments.reporting.lib import plots
from experiments.reporting.lib import stats as statistics
from experiments.reporting.lib.metrics import COMPARED, METRICS, PRIMARY, describe
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

KEY, ORDER = "verdicts", 20
PAPER_IS_CHANGE = 50.0  # TF-Replicator (arXiv 1902.00465): IS +~50% from batch 64 to 512
NAMES = {k: METRICS[k].label for k in COMPARED}
SECONDARY = tuple(k for k in COMPARED if k != PRIMARY)
EQUAL_IMAGES_FIGURE = "equal_images.png"
LABELS = {EQUAL_STEPS: "equal steps (the paper's)", EQUAL_IMAGES: "equal images"}
SHORT = {EQUAL_STEPS: "at equal steps", EQUAL_IMAGES: "at equal images"}


def _done(points: list[Point]) -> list[PointRecord]:
    return [p.record for p in points if p.record.status == "done"]


def _arm(records: list[PointRecord]) -> dict:
    return dict(batch=records[0].global_batch_size, steps=records[0].steps,
                images_seen=records[0].images_seen, seeds=sorted(r.seed for r in records),
                **{m: _mean_sd([final_value(r, m) for r in records]) for m in NAMES})


def _mean_sd(values) -> dict:
    d = describe(values)
    return dict(mean=d.mean, sd=d.sd)


def compare(name: str, base: list[PointRecord], other: list[PointRecord]) -> dict:
    """Every statistic of one comparison; `name` is its budget (EQUAL_STEPS or EQUAL_IMAGES)."""
    b0, b1 = base[0].global_batch_size, other[0].global_batch_size
    out = dict(name=name, label=LABELS[name], baseline=_arm(base), target=_arm(other),
               metrics={}, verdicts=[])
    intervals = {}
    for metric in NAMES:
        ci = ratio_vs_baseline(base, other, metric)
        if ci is None:
            continue
        intervals[metric] = ci
        a, b = seed_values(base, metric), seed_values(other, metric)
        paired = paired_vs_baseline(base, other, metric)
        out["metrics"][metric] = dict(
            interval=ci.to_dict(),
            exact=statistics.exact_test(list(a.values()), list(b.values())).to_dict(),
            paired=None if paired is None else paired.to_dict())
    secondary_p = {m: intervals[m].p_value for m in SECONDARY
                   if m in intervals and intervals[m].p_value is not None}
    adjusted = statistics.holm(secondary_p)
    for metric, ci in intervals.items():
        seeds = (len(seed_values(base, metric)), len(seed_values(other, metric)))
        paper = PAPER_IS_CHANGE if metric == PRIMARY and name == EQUAL_STEPS else None
        v = statistics.verdict(NAMES[metric], ci, METRICS[metric].higher_is_better, b0, b1,
                               seeds, paper, adjusted.get(metric) if metric != PRIMARY else None,
                               label=SHORT[name])
        out["metrics"][metric]["holm_p"] = adjusted.get(metric)
        out["verdicts"].append({**v.to_dict(), "name": v.metric, "metric": metric,
                                "primary": metric == PRIMARY})
    out["environments"] = environments.line(base + other)
    return out


def equal_images_arms(controls: list[Point], table_points: list[Point], baseline: int,
                      target: int):
    """(baseline control records, target-batch records with the same images seen), or None."""
    base = [r for r in _done(controls) if r.global_batch_size == baseline]
    if not base:
        return None
    images = max({r.images_seen for r in base}, key=[r.images_seen for r in base].count)
    base = [r for r in base if r.images_seen == images]
    other = {}
    for r in _done(table_points) + _done(controls):  # a labelled control wins a seed's slot
        if r.global_batch_size == target and r.images_seen == images:
            other[r.seed] = r
    return (base, list(other.values())) if other else (base, [])


def analyse(points: list[Point], baseline: int | None = None, target: int | None = None
            ) -> dict:
    """Every comparison, trend and noise floor of the budget points (one precision);
    `baseline`, `target`: the batches compared (None: StudyComparison's defaults)."""
    baseline = baseline or StudyComparison().baseline_batch
    target = target or StudyComparison().target_batch
    table_points, controls = split_by_budget(points)
    done = _done(table_points)
    out = dict(baseline_batch=baseline, target_batch=None, comparisons=[],
               equal_images_note=None, trends={}, seed_spread={}, evaluation_noise={},
               plateau=plateau(points))
    for metric in NAMES:
        pairs = [(r.global_batch_size, final_value(r, metric)) for r in done]
        pairs = [(b, v) for b, v in pairs if v is not None and math.isfinite(v)]
        try:
            out["trends"][metric] = statistics.trend_test(*zip(*pairs), baseline).to_dict()
        except (ValueError, TypeError):  # too few points for a trend
            pass
        out["seed_spread"][metric] = seed_spread(done, metric)
        out["evaluation_noise"][metric] = evaluation_noise(done, metric)
    batches = sorted({r.global_batch_size for r in done})
    target = target if target in batches else (max(batches) if batches else None)
    if baseline not in batches or target is None or target == baseline:
        return out
    out["target_batch"] = target
    main_budget = budget(done[0])
    out["comparisons"].append(compare(
        main_budget, [r for r in done if r.global_batch_size == baseline],
        [r for r in done if r.global_batch_size == target]))
    if main_budget == EQUAL_IMAGES:  # the whole sweep is at equal images: nothing to add
        return out
    arms = equal_images_arms(controls, table_points, baseline, target)
    if arms is None:
        out["equal_images_note"] = (
            f"No equal-images control points in this sweep (batch {baseline} points "
            f"with sweep_budget '{EQUAL_IMAGES}'): the equal-images comparison is not "
            "available.")
    elif not arms[1]:
        out["equal_images_note"] = (
            f"Equal-images control points exist, but no batch-{target} point saw the same "
            f"{arms[0][0].images_seen:,} images: the comparison is not available.")
    else:
        out["comparisons"].append(compare(EQUAL_IMAGES, *arms))
    return out


def seed_spread(done: list[PointRecord], metric: str) -> dict | None:
    """Coefficient of variation over training seeds, per batch size: the noise a difference
    between batch sizes must clear."""
    by_batch = defaultdict(list)
    for r in done:
        v = final_value(r, metric)
        if v is not None and math.isfinite(v):
            by_batch[r.global_batch_size].append(v)
    cvs = {b: statistics.spread(v).cv for b, v in sorted(by_batch.items()) if len(v) > 1}
    if not cvs:
        return None
    return dict(batch_sizes=len(cvs), median_cv=float(np.median(list(cvs.values()))),
                min_cv=float(min(cvs.values())), max_cv=float(max(cvs.values())),
                cv_by_batch={str(b): cv for b, cv in cvs.items()})


def evaluation_noise(done: list[PointRecord], metric: str) -> dict | None:
    """Coefficient of variation of one checkpoint over evaluation seeds, across points."""
    cvs = [statistics.spread(v).cv for v in (replicate_values(r, metric) for r in done)
           if len(v) > 1]
    if not cvs:
        return None
    return dict(points=len(cvs), median_cv=float(np.median(cvs)), max_cv=float(np.max(cvs)))


def plateau(points: list[Point]) -> list[dict]:
    """Per curve (budget, batch): did each seed's last evaluation interval change IS by more
    than the seed-to-seed spread of the final IS? A curve within the spread had flattened;
    one beyond it was still changing. Nothing here says 'converged'."""
    groups = defaultdict(list)
    for p in points:
        if p.record.status == "done":
            groups[(budget(p.record), p.record.global_batch_size, p.record.steps)].append(p)
    out = []
    for (name, batch, steps), group in sorted(groups.items()):
        finals = [p.record.final.is_mean for p in group]
        sd = statistics.spread(finals).std if len(finals) > 1 else None
        curves = []
        for p in sorted(group, key=lambda p: p.record.seed):
            h = sorted((e for e in p.history if e.step is not None), key=lambda e: e.step)
            if len(h) < 2:
                continue
            change = h[-1].is_mean - h[-2].is_mean
            curves.append(dict(seed=p.record.seed, from_step=h[-2].step, to_step=h[-1].step,
                               is_change=change,
                               flattened=None if sd is None else bool(abs(change) <= sd)))
        if curves:
            out.append(dict(budget=name, batch=batch, steps=steps, seed_sd=sd, curves=curves))
    return out


# -- Markdown ---------------------------------------------------------------------------------
def _pct(ci: dict) -> str:
    text = f"{100 * (ci['ratio'] - 1):+.1f}%"
    if ci["low"] != ci["low"]:  # NaN: no interval
        return text
    return f"{text} [{100 * (ci['low'] - 1):+.1f}, {100 * (ci['high'] - 1):+.1f}]"


def _p(p: float) -> str:
    return f"{p:#.2g}"


def _comparison_markdown(c: dict) -> list[str]:
    a, b = c["baseline"], c["target"]
    lines = [f"### {c['label'][0].upper() + c['label'][1:]}: batch {a['batch']} x "
             f"{a['steps']:,} steps vs batch {b['batch']} x {b['steps']:,} steps", "",
             f"Images seen: {a['images_seen']:,} vs {b['images_seen']:,}; seeds "
             f"{a['seeds']} vs {b['seeds']}.", "", c["environments"], ""]
    if c["name"] == EQUAL_IMAGES:
        lines += ["Here 'reproduced' means the larger batch still scores better when both "
                  "have seen the same images.", ""]
    lines += ["| arm | IS | FID | accuracy |", "|---|---|---|---|"]
    for arm in (a, b):
        cells = [METRICS[m].format(arm[m]["mean"])
                 + (f" ± {METRICS[m].format(arm[m]['sd'])}" if arm[m]["sd"] else "")
                 if arm[m]["mean"] is not None else "-" for m in NAMES]
        lines.append(f"| batch {arm['batch']} x {arm['steps']:,} | " + " | ".join(cells) + " |")
    lines.append("")
    for v in c["verdicts"]:
        lines.append(f"- **{v['text']}**" if v["primary"] else f"- {v['text']}")
    metrics = c["metrics"]
    # metrics may differ in seeds (a missing score): each line names the tests it speaks for
    ran = [(m, d["exact"]) for m, d in metrics.items() if d["exact"]["p_value"] is not None]
    skipped = [(m, d["exact"]) for m, d in metrics.items() if d["exact"]["p_value"] is None]
    if ran:
        lines.append("- Exact test (Mann-Whitney U, two-sided, distribution-free): " + "; ".join(
            f"{NAMES[m]} U = {e['u']:.0f}, p = {_p(e['p_value'])}" for m, e in ran)
            + f" (smallest attainable p = {_p(ran[0][1]['smallest_p'])}).")
    if skipped:
        e = skipped[0][1]
        which = f" for {', '.join(NAMES[m] for m, _ in skipped)}" if ran else ""
        lines.append(f"- Exact test not run{which}: {e['n_a']} vs {e['n_b']} seeds cannot reach "
                     f"p < {statistics.ALPHA:g} (smallest attainable two-sided p = "
                     f"{_p(e['smallest_p'])}).")
    paired = [(m, d["paired"]) for m, d in metrics.items() if d["paired"]]
    if paired:
        lines.append("- Sensitivity, seeds paired by index (seed k at both batch sizes shares "
                     "initial weights and data order; pairing is a modelling choice): " +
                     "; ".join(f"{NAMES[m]} {_pct(p)} (paired t, df {p['df']:.0f})"
                               if p["df"] is not None else f"{NAMES[m]} {_pct(p)}"
                               for m, p in paired) + ".")
    return lines + [""]


def _per_doubling(log_slope: float) -> str:
    return f"{math.expm1(log_slope) * 100:+.1f}%"


def _trend_lines(metric: str, t: dict) -> list[str]:
    if t["spearman_p_at_floor"]:
        p = (f"Monte Carlo p ≤ 1/{t['resamples'] + 1:,}: none of {t['resamples']:,} random "
             "orderings reached it")
    else:
        p = f"p = {_p(t['spearman_p'])}"
    means = (f"; batch means (n = {t['means_n']}): rho {t['means_rho']:+.2f}, exact p = "
             f"{_p(t['means_p'])} (all {math.factorial(t['means_n']):,} orderings)"
             if t["means_p"] == t["means_p"] else "")
    lines = [f"- {NAMES[metric]} over log2(batch), all seeds pooled (n = {t['n']}): Spearman "
             f"rho {t['spearman_rho']:+.2f}, {p}{means}."]
    fits = []
    for f in t["lines"]:
        if f["lack_of_fit_p"] is None:
            fit = "lack of fit not testable"
        else:
            fit = (f"lack-of-fit p = {_p(f['lack_of_fit_p'])}: a line "
                   + ("fits" if f["lack_of_fit_p"] >= statistics.ALPHA else "does not fit"))
        fits.append(f"batch {f['first']}..{f['last']} {_per_doubling(f['slope'])} per "
                    f"doubling [95% CI {_per_doubling(f['slope_low'])}, "
                    f"{_per_doubling(f['slope_high'])}], {fit}")
    lines.append("  - Straight lines of log value in log2(batch) (the intervals' scale): "
                 + "; ".join(fits) + ".")
    return lines


PLATEAU = ("- batch {batch} x {steps:,} steps ({budget}), steps {from_step:,} -> {to_step:,}: "
           "IS {changes} vs seed spread {sd}: flattened {flat} of {n} curves (seeds {seeds}).")
SEED_SPREAD = ("- Seed-to-seed spread of {label} (the noise floor a difference must clear): "
               "coefficient of variation median {median:.1f}%, range {low:.1f}-{high:.1f}% "
               "(batch sizes: {n}).")
EVAL_NOISE = ("- Evaluation noise of {label} (one checkpoint, several evaluation seeds; a "
              "separate, smaller floor): coefficient of variation median {median:.2f}%, max "
              "{high:.2f}% (points: {n}).")


def _plateau_lines(result: dict) -> list[str]:
    """One fixed line per curve group; '-' where one seed leaves no spread to judge by."""
    lines = []
    for g in result["plateau"]:
        flat = [c["seed"] for c in g["curves"] if c["flattened"]]
        lines.append(PLATEAU.format(
            **g["curves"][0], batch=g["batch"], steps=g["steps"], budget=SHORT[g["budget"]],
            changes=", ".join(f"{c['is_change']:+.2f}" for c in g["curves"]),
            sd="-" if g["seed_sd"] is None else f"{g['seed_sd']:.2f}",
            flat="-" if g["seed_sd"] is None else len(flat), n=len(g["curves"]),
            seeds=", ".join(map(str, flat)) or "-"))
    return lines


def _noise_lines(result: dict) -> list[str]:
    return [SEED_SPREAD.format(label=NAMES[m], median=100 * s["median_cv"],
                               low=100 * s["min_cv"], high=100 * s["max_cv"],
                               n=s["batch_sizes"])
            for m, s in result["seed_spread"].items() if s] + [
        EVAL_NOISE.format(label=NAMES[m], median=100 * e["median_cv"], high=100 * e["max_cv"],
                          n=e["points"])
        for m, e in result["evaluation_noise"].items() if e]


def analysis_markdown(result: dict) -> str:
    lines = ["## Signal and noise", ""]
    if not result["comparisons"]:
        lines += [f"No verdict: it needs finished points at batch {result['baseline_batch']} "
                  "and a larger batch.", ""]
    else:
        lines += [
            "Intervals: 95% Welch t-intervals on log values (seeds as independent runs), "
            "around the ratio of geometric means; df = Welch-Satterthwaite degrees of freedom. "
            "IS is the primary metric, judged by its interval; FID and accuracy are secondary, "
            "judged by Holm-adjusted p-values over the two of them. All three come from one "
            "classifier's outputs, so they are not three independent confirmations.", ""]
    for c in result["comparisons"]:
        lines += _comparison_markdown(c)
    if result["equal_images_note"]:
        lines += [f"### {LABELS[EQUAL_IMAGES][0].upper() + LABELS[EQUAL_IMAGES][1:]}", "",
                  result["equal_images_note"], ""]
    if result["trends"]:
        lines += ["### Trend over batch size", ""]
        for metric, t in result["trends"].items():
            lines += _trend_lines(metric, t)
        lines.append("")
    noise = _noise_lines(result)
    if noise:
        lines += ["### Noise", ""] + noise + [""]
    if result["plateau"]:
        lines += ["### Plateau (the last evaluation interval against the seed spread)", ""]
        lines += _plateau_lines(result)
        lines += ["", "A curve whose last interval changed IS by more than the seed-to-seed "
                  "spread of the final IS had not flattened; none is called converged.", ""]
    return "\n".join(lines)


def compute(study, earlier: dict) -> dict:
    c = study.comparison
    return analyse(study.compared, c.baseline_batch, c.target_batch)


def render(result: dict, study) -> str:
    return analysis_markdown(result)


def draw(result: dict, study) -> None:
    """The figure of the equal-images comparison, when the analysis found one."""
    for c in result["comparisons"]:
        if c["name"] != EQUAL_IMAGES or c["baseline"]["batch"] == c["target"]["batch"]:
            continue
        arms = []
        for arm in (c["baseline"], c["target"]):
            chosen = {}
            for p in study.compared:  # a labelled control wins its seed's slot, as analysed
                r = p.record
                if (r.status == "done" and r.global_batch_size == arm["batch"]
                        and r.images_seen == arm["images_seen"] and r.seed in arm["seeds"]
                        and (r.seed not in chosen or budget(r) == EQUAL_IMAGES)):
                    chosen[r.seed] = p
            arms.append([chosen[s] for s in sorted(chosen)])
        plots.equal_images_curves(arms, os.path.join(study.out_dir, EQUAL_IMAGES_FIGURE))
