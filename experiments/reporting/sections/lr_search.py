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

import numpy as np

from experiments.reporting.lib import lr_search as ls
from experiments.reporting.lib import markdown, plots
from experiments.reporting.lib import placement as pl
from experiments.reporting.lib.metrics import describe
from experiments.reporting.sections import time_to_target as ttt
from experiments.reporting.sections.time_to_target import ci_text, fmt

KEY, ORDER = "lr_search", 65
METRIC = "is_mean"
TARGET_START, TARGET_STEP = 3.0, 0.5
FIGURES = ("lr_search_steps.png", "lr_search_best_lr.png", "lr_search_grid.png")


def _noise(runs, choices, target) -> dict:
    """Each player's B_simple where the chosen cells' runs cross the target (geometric mean)."""
    out = {}
    for player in ("d", "g"):
        vals = []
        for r in runs:
            c = choices.get(r.batch)
            cross = r.curve.crossing(METRIC, target)
            if c is not None and r.factor == c.factor and cross.reached:
                v = r.curve.b_simple_at(player, cross.step)
                if v is not None:
                    vals.append(v)
        out[player] = describe(vals).geomean if vals else None
    return out


def analyse(runs, n_dis: int, baseline: int, bigger, bootstrap: int, fixed_rows) -> dict:
    fixed = {r["target"]: r["fit"] for r in fixed_rows or [] if r.get("fit")}
    rows, target = [], TARGET_START
    while True:
        choices = ls.choose(runs, METRIC, target)
        if sum(not c.censored for c in choices.values()) < ttt.MIN_BATCH_SIZES:
            break
        # one re-selecting bootstrap of every run serves the full-range fit and the lr rule
        drawn = ls.resampled_choices(runs, METRIC, target, bootstrap) if bootstrap else None
        fits = {"all": ls.tuned_fit(runs, choices, METRIC, target, n_dis, bootstrap=bootstrap,
                                    resampled=drawn),
                "from_baseline": ls.tuned_fit(runs, choices, METRIC, target, n_dis,
                                              batches=[b for b in choices if b >= baseline],
                                              bootstrap=bootstrap)}
        rule = ls.lr_rule(runs, choices, METRIC, target, bootstrap=bootstrap, resampled=drawn)
        ups = [ls.speedup(runs, choices, METRIC, target, baseline, b, bootstrap=bootstrap)
               for b in bigger]
        biases = [c.selection_bias for c in choices.values() if c.selection_bias is not None]
        rows.append(dict(
            target=target,
            choices={str(b): dict(c.__dict__, selection_bias=c.selection_bias,
                                  next_factor=ls.next_factor(c))
                     for b, c in sorted(choices.items())},
            fits={k: f.to_dict() if f else None for k, f in fits.items()},
            excess_batch=ls.excess_batch(choices), lr_rule=rule.to_dict() if rule else None,
            speedups=[u.to_dict() for u in ups if u is not None],
            selection_bias=describe(biases).geomean if biases else None,
            held_out_batches=len(biases), b_simple=_noise(runs, choices, target),
            fixed_lr_fit=fixed.get(target)))
        target = round(target + TARGET_STEP, 6)
    out = dict(metric=METRIC, rows=rows)
    fitted = [r for r in rows if r["fits"]["all"] and r["fits"]["all"]["b_crit_ci"]]
    for p in ("d", "g"):
        out[f"b_simple_{p}"] = pl.tally(
            (r["b_simple"][p], r["fits"]["all"]["fit"]["b_crit"], *r["fits"]["all"]["b_crit_ci"])
            for r in fitted if r["b_simple"][p]).to_dict()
    out["brackets"] = {v: sum(c["bracket"] == v for r in rows for c in r["choices"].values())
                       for v in (ls.BRACKETED, ls.AT_LOWEST, ls.AT_HIGHEST, ls.WIDE_GAP)}
    return out


def compute(study, earlier: dict) -> dict | None:
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
    fixed = (earlier.get(ttt.KEY) or {}).get(c.headline_arm, {})
    fixed_rows = fixed.get("metrics", {}).get(METRIC) if fixed else None
    out = analyse(runs, searched[0].config.train.n_dis, c.baseline_batch, c.bigger_batches,
                  study.bootstrap, fixed_rows)
    out.update(base_lr=base_lr, arms=list(c.lr_search_arms) + list(c.lr_search_reuses),
               runs=len(runs), diverged=sum(r.diverged for r in runs))
    return out


# -- rendering: tables and fixed templates -------------------------------------------------------
HEAD = ("## The lr tuned per batch size (v5)\n\n"
        "{runs} runs ({diverged} diverged) at lr = {base_lr:.3g} x factor for both players; "
        "each batch's factor chosen on seeds 0-1, steps at the chosen factor over every seed "
        "(geometric mean); intervals: 95% bootstrap re-selecting the factor in every "
        "resample. Choices over all targets: bracketed {b}, best at the lowest factor {lo}, "
        "at the highest {hi}, a neighbour more than 2x away {gap}.")
NOISE = ("B_simple at the tuned crossings against the tuned B_crit (16-512): D below at "
         "{d[below]} of {d[n]} targets, inside at {d[inside]}, above at {d[above]}; G below at "
         "{g[below]} of {g[n]}, inside at {g[inside]}, above at {g[above]}.")


def _cell(steps) -> str:
    return "censored" if steps is None else f"{steps:,.0f}"


def _grid(row: dict) -> list[str]:
    factors = sorted({f for c in row["choices"].values() for f in c["factors"]})
    body = []
    for b, c in row["choices"].items():
        steps = dict(zip(c["factors"], c["cell_steps"]))
        cells = [("**" + _cell(steps[f]) + "**" if f == c["factor"] else _cell(steps[f]))
                 if f in steps else "" for f in factors]
        body.append([b, *cells, c["bracket"], fmt(c["next_factor"], "g")])
    return [f"Steps to IS {row['target']:.1f} per lr factor (selection seeds; chosen in bold):",
            "", markdown.table(["batch", *[f"x{f:g}" for f in factors], "bracket",
                                "run next"], body), ""]


def _fit_cell(f) -> str:
    if not f:
        return "-"
    p = f["lack_of_fit_p"]
    return (f"{f['fit']['b_crit']:.0f}{ci_text(f['b_crit_ci'])}"
            f" (lack of fit p {fmt(p, '.3f')})")


def render(result: dict, study) -> str:
    rows = result["rows"]
    head = HEAD.format(**result, b=result["brackets"][ls.BRACKETED],
                       lo=result["brackets"][ls.AT_LOWEST], hi=result["brackets"][ls.AT_HIGHEST],
                       gap=result["brackets"][ls.WIDE_GAP])
    lines = [head, ""]
    if rows:
        lines += _grid(rows[-1])
    batches = sorted({int(b) for r in rows for b in r["choices"]})
    body = [[f"{r['target']:.1f}",
             " / ".join(f"{r['choices'][str(b)]['factor']:g}" if str(b) in r["choices"] else "-"
                        for b in batches),
             _fit_cell(r["fits"]["all"]), _fit_cell(r["fits"]["from_baseline"]),
             fmt(r["excess_batch"]),
             (f"{r['lr_rule']['exponent']:.2f}{ci_text(r['lr_rule']['ci'], '.2f')}"
              if r["lr_rule"] else "-"),
             fmt(r["selection_bias"], ".2f") + f" ({r['held_out_batches']})",
             (f"{r['fixed_lr_fit']['b_crit']:.0f}{ci_text(r['fixed_lr_fit']['b_crit_ci'])}"
              if r["fixed_lr_fit"] else "-")]
            for r in rows]
    lines += [markdown.table(
        ["IS target", "factor at " + " / ".join(map(str, batches)), "B_crit 16-512",
         "B_crit from baseline", "20% past perfect scaling", "lr exponent a",
         "selection bias (batches)", "fixed-lr B_crit"], body), ""]
    ups = [[f"{r['target']:.1f}", f"{u['baseline']} -> {u['batch']}",
            f"x{u['baseline_factor']:g} -> x{u['factor']:g}",
            f"{u['bound']}{u['steps_saved']:.2f}x", ci_text(u["welch_ci"], ".2f").strip(),
            ci_text(u["bootstrap_ci"], ".2f").strip(), f"{u['images_spent']:.2f}x"]
           for r in rows for u in r["speedups"]]
    lines += ["Steps saved at the tuned lr (Welch t-interval on log steps; bootstrap "
              "re-selecting the factor):", "",
              markdown.table(["IS target", "batch", "lr factor", "steps saved", "Welch",
                              "bootstrap", "images spent"], ups), ""]
    rules = [[f"{r['target']:.1f}", *[r["lr_rule"]["rules"][k] for k in ls.RULES],
              str(r["lr_rule"]["peak_batch"]), str(r["lr_rule"]["falls_after_peak"]).lower()]
             for r in rows if r["lr_rule"]]
    lines += ["The lr rule lr* ~ B^a against none (a = 0), square root (1/2) and linear (1):",
              "", markdown.table(["IS target", *ls.RULES, "peak batch", "falls after peak"],
                                 rules), ""]
    if result["b_simple_d"]["n"] or result["b_simple_g"]["n"]:
        lines += [NOISE.format(d=result["b_simple_d"], g=result["b_simple_g"]), ""]
    return "\n".join(lines)


# -- figures --------------------------------------------------------------------------------------
def draw(result: dict, study) -> None:
    from experiments.pyplot import plt

    rows = result["rows"]
    if not rows:
        return
    row = rows[-1]
    bs = np.array(sorted(int(b) for b in row["choices"]))
    tuned = np.array([row["choices"][str(b)]["steps_all"] for b in bs])
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.loglog(bs, tuned, "o-", label="lr tuned per batch")
    fixed = (row["fixed_lr_fit"] or {})
    if fixed:
        ax.loglog(fixed["batches"], np.exp(fixed["log_steps"]), "s--", label="lr x1 (v4)")
    ax.loglog(bs, tuned[0] * bs[0] / bs, ":", color="grey", label="perfect scaling")
    ax.set(xlabel="global batch", ylabel=f"steps to IS {row['target']:.1f}")
    plots.finish(fig, ax, os.path.join(study.out_dir, FIGURES[0]))
    fig, ax = plt.subplots(figsize=(5, 3.6))
    best = np.array([row["choices"][str(b)]["refined_factor"] for b in bs])
    ax.loglog(bs, best, "o-", label="best factor (parabola vertex)")
    for name, a in ls.RULES.items():
        ax.loglog(bs, best[0] * (bs / bs[0]) ** a, ":", label=f"{name} (a = {a:g})")
    ax.set(xlabel="global batch", ylabel="lr factor")
    plots.finish(fig, ax, os.path.join(study.out_dir, FIGURES[1]))
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for b in bs:
        c = row["choices"][str(b)]
        f = [x for x, s in zip(c["factors"], c["cell_steps"]) if s is not None]
        s = [s for s in c["cell_steps"] if s is not None]
        ax.loglog(f, s, "o-", label=f"batch {b}")
    ax.set(xlabel="lr factor", ylabel=f"steps to IS {row['target']:.1f} (seeds 0-1)")
    plots.finish(fig, ax, os.path.join(study.out_dir, FIGURES[2]))
