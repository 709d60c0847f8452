"""Study v5: the lr searched per batch size (lib/lr_search.py), so that the critical batch is
McCandlish et al.'s (every batch at its own best lr) and the steps a bigger batch saves stop
depending on one recipe. The search arms are the config's `lr_search_arms`; its reused arms
(`lr_search_reuses`: the fixed-lr arm as factor 1, the probe) join them as cells.

Per IS target: the grid (each cell's steps on the selection seeds), whether each batch's
choice is bracketed and the factor that would bracket it, the tuned fit over every batch size
and from the baseline batch up (lack-of-fit p beside each), the batch 20% past perfect
scaling, the lr exponent, the practical table with both intervals, the held-out seeds'
selection bias, the noise scale at the tuned crossings against the tuned B_crit, and the
fixed-lr arm's B_crit beside the tuned one.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np

from experiments.reporting.lib import lr_search as ls
from experiments.reporting.lib import markdown, plots
from experiments.reporting.lib import placement as pl
from experiments.reporting.lib.crossings import METRICS
from experiments.reporting.lib.mccandlish import Fit
from experiments.reporting.lib.metrics import describe
from experiments.reporting.sections import time_to_target as ttt
from experiments.reporting.sections.time_to_target import ci_text, fmt

KEY, ORDER = "lr_search", 65
METRIC = "is_mean"
FIGURES = ("lr_search_steps.png", "lr_search_best_lr.png", "lr_search_grid.png")


@dataclass(frozen=True)
class TunedTarget:
    """One IS target on the tuned frontier: each batch's choice (str(batch) ->), the fits over
    every batch ('all') and from the baseline up ('from_baseline'), the batch 20% past perfect
    scaling, the lr rule, the practical table, the held-out seeds' selection bias (geometric
    mean over `held_out_batches`), B_simple at the tuned crossings (player -> geometric mean)
    and the fixed-lr arm's fit at the same target."""
    target: float
    choices: dict[str, ls.Choice]
    fits: dict[str, ls.TunedFit | None]
    excess_batch: float | None
    lr_rule: ls.LrRule | None
    speedups: list[ls.TunedSpeedup]
    selection_bias: float | None
    held_out_batches: int
    b_simple: dict[str, float | None]
    fixed_lr_fit: Fit | None


@dataclass(frozen=True)
class LrSearch:
    metric: str
    rows: list[TunedTarget]
    b_simple_d: pl.Tally  # D's B_simple against the tuned B_crit (every batch) per target
    b_simple_g: pl.Tally
    brackets: dict[str, int]  # lib/lr_search.BRACKETS -> choices over all targets
    base_lr: float
    arms: list[str]
    runs: int
    diverged: int


def tuned_target(runs, target, n_dis, baseline, bigger, bootstrap, fixed) -> TunedTarget:
    choices = ls.choose(runs, METRIC, target)
    # one re-selecting bootstrap of every run serves the full-range fit and the lr rule
    drawn = ls.resampled_choices(runs, METRIC, target, bootstrap) if bootstrap else None
    fits = {"all": ls.tuned_fit(runs, choices, METRIC, target, n_dis, bootstrap=bootstrap,
                                resampled=drawn),
            "from_baseline": ls.tuned_fit(runs, choices, METRIC, target, n_dis,
                                          batches=[b for b in choices if b >= baseline],
                                          bootstrap=bootstrap)}
    ups = [ls.speedup(runs, choices, METRIC, target, baseline, b, bootstrap=bootstrap)
           for b in bigger]
    biases = [c.selection_bias for c in choices.values() if c.selection_bias is not None]
    chosen = [r.curve for r in runs if r.batch in choices
              and r.factor == choices[r.batch].factor]
    return TunedTarget(
        target, {str(b): c for b, c in sorted(choices.items())}, fits, ls.excess_batch(choices),
        ls.lr_rule(runs, choices, METRIC, target, bootstrap=bootstrap, resampled=drawn),
        [u for u in ups if u is not None], describe(biases).geomean if biases else None,
        len(biases), {p: (x.geomean if (x := ttt.b_simple_range(chosen, METRIC, target, p))
                          else None) for p in ttt.PLAYERS}, fixed.get(target))


def analyse(runs, n_dis: int, baseline: int, bigger, bootstrap: int, fixed: dict,
            base_lr: float, arms: list[str]) -> LrSearch:
    """`fixed`: {target: the fixed-lr arm's Fit}."""
    rows = []
    target, spacing = METRICS[METRIC].targets
    while sum(not c.censored for c in ls.choose(runs, METRIC, target).values()) \
            >= ttt.MIN_BATCH_SIZES:
        rows.append(tuned_target(runs, target, n_dis, baseline, bigger, bootstrap, fixed))
        target = round(target + spacing, 6)
    fitted = [r for r in rows if r.fits["all"] and r.fits["all"].b_crit_ci]
    d, g = (pl.tally((r.b_simple[p], r.fits["all"].fit.b_crit, *r.fits["all"].b_crit_ci)
                     for r in fitted if r.b_simple[p]) for p in ttt.PLAYERS)
    brackets = {v: sum(c.bracket == v for r in rows for c in r.choices.values())
                for v in ls.BRACKETS}
    return LrSearch(METRIC, rows, d, g, brackets, base_lr, arms, len(runs),
                    sum(r.diverged for r in runs))


def compute(study, earlier: dict) -> LrSearch | None:
    c = study.comparison
    searched = [p for a in c.lr_search_arms for p in study.arm(a)]
    if not searched:
        return None
    reused = [p for a in c.lr_search_reuses for p in study.arm(a)]
    # factor 1 is the first reused arm's lr (the fixed-lr arm), else the config default's
    fixed_lr = study.arm(c.lr_search_reuses[0]) if c.lr_search_reuses else []
    base_lr = (fixed_lr[0].config.train.g_lr if fixed_lr
               else type(searched[0].config.train)().g_lr)
    runs = ls.runs_of(searched + reused, base_lr)
    arm = (earlier.get(ttt.KEY) or {}).get(c.headline_arm)
    fixed = {r.target: r.fit for r in arm.metrics[METRIC] if r.fit} if arm else {}
    return analyse(runs, searched[0].config.train.n_dis, c.baseline_batch, c.bigger_batches,
                   study.bootstrap, fixed, base_lr, [*c.lr_search_arms, *c.lr_search_reuses])


# -- rendering: tables and fixed templates -------------------------------------------------------
HEAD = ("## The lr tuned per batch size (v5)\n\n"
        "{runs} runs ({diverged} diverged) at lr = {base_lr:.3g} x factor for both players; "
        "each batch's factor chosen on seeds 0-1, steps at the chosen factor over every seed "
        "(geometric mean); intervals: 95% bootstrap re-selecting the factor in every "
        "resample. Choices over all targets:")
NOISE = ("B_simple at the tuned crossings against the tuned B_crit (16-512): D below at "
         "{d[below]} of {d[n]} targets, inside at {d[inside]}, above at {d[above]}; G below at "
         "{g[below]} of {g[n]}, inside at {g[inside]}, above at {g[above]}.")
RULE = "The lr rule lr* ~ B^a against none (a = 0), square root (1/2) and linear (1):"
SAVED = ("Steps saved at the tuned lr (Welch t-interval on log steps; bootstrap re-selecting "
         "the factor):")


def _grid(row: TunedTarget) -> list[str]:
    factors = sorted({f for c in row.choices.values() for f in c.factors})
    body = []
    for b, c in row.choices.items():
        steps = dict(zip(c.factors, c.cell_steps))
        cells = [("**{}**" if f == c.factor else "{}").format(
            "censored" if steps[f] is None else f"{steps[f]:,.0f}") if f in steps else ""
            for f in factors]
        body.append([b, *cells, c.bracket, fmt(c.next_factor, "g")])
    return [f"Steps to IS {row.target:.1f} per lr factor (selection seeds; chosen in bold):",
            "", markdown.table(["batch", *[f"x{f:g}" for f in factors], "bracket",
                                "run next"], body), ""]


def _b_crit(f, ci) -> str:
    return "-" if f is None else f"{f.b_crit:.0f}{ci_text(ci)}"


def _fit_cell(f: ls.TunedFit | None) -> str:
    return "-" if f is None else (f"{_b_crit(f.fit, f.b_crit_ci)} (lack of fit p "
                                  f"{fmt(f.lack_of_fit_p, '.3f')})")


def render(result: LrSearch, study) -> str:
    rows = result.rows
    lines = [HEAD.format(**asdict(result)), "",
             ", ".join(f"{k} {v}" for k, v in result.brackets.items()) + ".", ""]
    lines += _grid(rows[-1]) if rows else []
    batches = sorted({int(b) for r in rows for b in r.choices})
    body = [[f"{r.target:.1f}",
             " / ".join(f"{r.choices[str(b)].factor:g}" if str(b) in r.choices else "-"
                        for b in batches),
             _fit_cell(r.fits["all"]), _fit_cell(r.fits["from_baseline"]), fmt(r.excess_batch),
             f"{r.lr_rule.exponent:.2f}{ci_text(r.lr_rule.ci, '.2f')}" if r.lr_rule else "-",
             fmt(r.selection_bias, ".2f") + f" ({r.held_out_batches})",
             _b_crit(r.fixed_lr_fit, r.fixed_lr_fit and r.fixed_lr_fit.b_crit_ci)]
            for r in rows]
    ups = [[f"{r.target:.1f}", f"{u.baseline} -> {u.batch}",
            f"x{u.baseline_factor:g} -> x{u.factor:g}", f"{u.bound}{u.steps_saved:.2f}x",
            ci_text(u.welch_ci, ".2f").strip(), ci_text(u.bootstrap_ci, ".2f").strip(),
            f"{u.images_spent:.2f}x"] for r in rows for u in r.speedups]
    rules = [[f"{r.target:.1f}", *[str(r.lr_rule.rules[k]) for k in ls.RULES],
              str(r.lr_rule.peak_batch), str(r.lr_rule.falls_after_peak).lower()]
             for r in rows if r.lr_rule]
    return "\n".join(lines + [
        markdown.table(["IS target", "factor at " + " / ".join(map(str, batches)),
                        "B_crit 16-512", "B_crit from baseline", "20% past perfect scaling",
                        "lr exponent a", "selection bias (batches)", "fixed-lr B_crit"], body),
        "", SAVED, "",
        markdown.table(["IS target", "batch", "lr factor", "steps saved", "Welch", "bootstrap",
                        "images spent"], ups), "", RULE, "",
        markdown.table(["IS target", *ls.RULES, "peak batch", "falls after peak"], rules), "",
        NOISE.format(d=asdict(result.b_simple_d), g=asdict(result.b_simple_g)), ""])


def draw(result: LrSearch, study) -> None:
    from experiments.pyplot import plt

    if not result.rows:
        return
    row = result.rows[-1]
    bs = np.array(sorted(int(b) for b in row.choices))
    choices = [row.choices[str(b)] for b in bs]
    tuned = np.array([c.steps_all for c in choices])
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.loglog(bs, tuned, "o-", label="lr tuned per batch")
    if row.fixed_lr_fit:
        ax.loglog(row.fixed_lr_fit.batches, np.exp(row.fixed_lr_fit.log_steps), "s--",
                  label="lr x1 (v4)")
    ax.loglog(bs, tuned[0] * bs[0] / bs, ":", color="grey", label="perfect scaling")
    ax.set(xlabel="global batch", ylabel=f"steps to IS {row.target:.1f}")
    plots.finish(fig, ax, os.path.join(study.out_dir, FIGURES[0]), legend=ax)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    best = np.array([c.refined_factor for c in choices])
    ax.loglog(bs, best, "o-", label="best factor (parabola vertex)")
    for name, a in ls.RULES.items():
        ax.loglog(bs, best[0] * (bs / bs[0]) ** a, ":", label=f"{name} (a = {a:g})")
    ax.set(xlabel="global batch", ylabel="lr factor")
    plots.finish(fig, ax, os.path.join(study.out_dir, FIGURES[1]), legend=ax)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for b, c in zip(bs, choices):
        reached = [(f, s) for f, s in zip(c.factors, c.cell_steps) if s is not None]
        ax.loglog([f for f, _ in reached], [s for _, s in reached], "o-", label=f"batch {b}")
    ax.set(xlabel="lr factor", ylabel=f"steps to IS {row.target:.1f} (seeds 0-1)")
    plots.finish(fig, ax, os.path.join(study.out_dir, FIGURES[2]), legend=ax)
