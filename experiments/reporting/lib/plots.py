"""Figures of a sweep: scores against batch size, learning curves, the comparison figure."""
from __future__ import annotations

import os
from collections import defaultdict

import numpy as np

from experiments import grids
from experiments.class_names import class_name
from experiments.pyplot import plt
from experiments.records import Point


def plot_vs_batch(rows, path):
    rows = [r for r in rows if r["is_mean"] is not None]
    if not rows:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    b = [r["batch"] for r in rows]
    a1.errorbar(b, [r["is_mean"] for r in rows], yerr=[r["is_std"] or 0 for r in rows],
                marker="o", capsize=3)
    a1.set_ylabel("Inception/classifier score (higher is better)")
    a2.errorbar(b, [r["fid"] for r in rows], yerr=[r["fid_std"] or 0 for r in rows],
                marker="o", capsize=3, color="tab:red")
    a2.set_ylabel("FID (lower is better)")
    for ax in (a1, a2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(b)
        ax.set_xticklabels([str(x) for x in b])
        ax.set_xlabel("global batch size")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    grids.save_figure(fig, path)


def plot_curves(points: list[Point], x_key: str, path: str, xlabel: str):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    by_batch = defaultdict(list)
    for p in points:
        if p.history:
            by_batch[p.record.global_batch_size].append(p)
    if not by_batch:
        plt.close(fig)
        return
    cmap = plt.get_cmap("viridis")
    sizes = sorted(by_batch)
    for i, batch in enumerate(sizes):
        first_seed = by_batch[batch][0]
        h = sorted(first_seed.history, key=lambda e: e.step)
        x = [e.step if x_key == "step" else e.images_seen for e in h]
        color = cmap(i / max(len(sizes) - 1, 1))
        a1.plot(x, [e.is_mean for e in h], marker=".", color=color, label=f"batch {batch}")
        a2.plot(x, [e.fid for e in h], marker=".", color=color, label=f"batch {batch}")
    a1.set_ylabel("IS")
    a2.set_ylabel("FID")
    for ax in (a1, a2):
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        if x_key == "images_seen":
            ax.set_xscale("log")
    a2.legend(fontsize=7)
    fig.tight_layout()
    grids.save_figure(fig, path)


def comparison(points: list[Point], path: str):
    rows = {}
    dataset, cls = None, 0
    for p in sorted(points, key=lambda p: (p.record.global_batch_size, p.record.seed)):
        batch = p.record.global_batch_size
        if p.record.status != "done" or batch in rows or not os.path.exists(p.samples_path):
            continue
        with np.load(p.samples_path, allow_pickle=False) as z:
            rows[batch] = z["comparison"]
        dataset, cls = p.config.data.name, p.config.eval.sample_class
    if rows:
        grids.comparison_figure(rows, path, class_name(dataset, cls))


def equal_images_curves(arms: list[list[Point]], path: str):
    """IS and accuracy against images seen, one line per arm (e.g. batch 64 x 8,000 steps and
    batch 512 x 1,000 steps): the mean over seeds with a band from the lowest to the highest
    seed, so the reader sees where the arms part and whether the spread covers it."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red")
    for arm, color in zip(arms, colors):
        curves = [sorted((e for e in p.history if e.images_seen is not None),
                         key=lambda e: e.images_seen) for p in arm]
        curves = [c for c in curves if c]
        if not curves:
            continue
        shared = sorted(set.intersection(*({e.images_seen for e in c} for c in curves)))
        rec = arm[0].record
        label = (f"batch {rec.global_batch_size} x {rec.steps:,} steps "
                 f"({len(curves)} seed{'s' if len(curves) > 1 else ''})")
        for ax, field in zip(axes, ("is_mean", "accuracy")):
            values = np.array([[getattr(e, field) for e in c if e.images_seen in shared]
                               for c in curves], dtype=float)
            if np.isnan(values).all():
                continue
            ax.plot(shared, np.nanmean(values, axis=0), marker=".", color=color, label=label)
            if len(curves) > 1:
                ax.fill_between(shared, np.nanmin(values, axis=0), np.nanmax(values, axis=0),
                                color=color, alpha=0.2, linewidth=0)
    axes[0].set_ylabel("IS (higher is better)")
    axes[1].set_ylabel("conditional accuracy (higher is better)")
    for ax in axes:
        ax.set_xlabel("real images seen by D")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, title="mean; band: seed range", title_fontsize=7)
    fig.tight_layout()
    grids.save_figure(fig, path)


# -- time to target ----------------------------------------------------------------------
def _bars(centres, intervals) -> np.ndarray:
    """Error-bar lengths (2 x n); a percentile interval may miss its centre: no negative bar."""
    return np.array([[max(c - lo, 0.0), max(hi - c, 0.0)]
                     for c, (lo, hi) in zip(centres, intervals)]).T


ARM_FIGURES = (("hyperbolas", "steps vs images"), ("curves", "IS vs steps"),
               ("b_crit", "B_crit vs target"))
FIGURES = {"hyperbolas": "steps_vs_images.png", "curves": "is_vs_steps.png",
           "b_crit": "b_crit_vs_target.png"}  # each prefixed with its arm's name


def arm_figure(arm: str, key: str) -> str:
    return f"{arm}_{FIGURES[key]}"


def finish(fig, ax, path: str) -> None:
    """The look the three figures share, then saved (PNG and PDF) and closed."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    grids.save_figure(fig, path)


def time_to_target_figures(result: dict, points: list[Point], out_dir: str, arm: str) -> None:
    """S vs E per IS target with the fitted hyperbolas; IS vs steps with seed bands; B_crit
    and B_simple vs target."""
    rows = result["metrics"]["is_mean"]
    cmap = plt.get_cmap("plasma")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, r in enumerate(rows):
        color = cmap(i / max(len(rows) - 1, 1))
        for b, cs in r["crossings"].items():
            for c in cs:
                e = result["n_dis"] * int(b) * c["step"]
                ax.scatter(e, c["step"], color=color, s=10, marker="^" if c["censored"] else "o")
        f = r["fit"]
        if f:
            bs = np.geomspace(min(result["batches"]) / 2, max(result["batches"]) * 2, 100)
            s = f["s_min"] * (1 + f["b_crit"] / bs)
            ax.plot(result["n_dis"] * bs * s, s, color=color, label=f"IS {r['target']:.1f}")
    ax.set(xscale="log", yscale="log", xlabel="real images seen by D (E)",
           ylabel="generator steps (S)", title="steps vs images to each IS target")
    finish(fig, ax, os.path.join(out_dir, arm_figure(arm, "hyperbolas")))

    fig, ax = plt.subplots(figsize=(6, 4))
    by_batch = defaultdict(list)
    for p in points:
        by_batch[p.record.global_batch_size].append(p)
    vir = plt.get_cmap("viridis")
    for i, b in enumerate(sorted(by_batch)):
        steps = sorted(set.intersection(*[{e.step for e in p.history} for p in by_batch[b]]))
        vals = np.array([[next(e.is_mean for e in p.history if e.step == s) for s in steps]
                         for p in by_batch[b]])
        color = vir(i / max(len(by_batch) - 1, 1))
        ax.plot(steps, vals.mean(0), color=color, label=f"batch {b} ({len(vals)} seeds)")
        ax.fill_between(steps, vals.min(0), vals.max(0), color=color, alpha=0.2)
    ax.set(xscale="log", xlabel="generator steps", ylabel="IS",
           title="IS at constant lr (band: seeds' range)")
    finish(fig, ax, os.path.join(out_dir, arm_figure(arm, "curves")))

    fig, ax = plt.subplots(figsize=(5.5, 4))
    t = [r["target"] for r in rows if r["fit"] and not r["fit"]["at_bound"]]
    fits = [r["fit"] for r in rows if r["fit"] and not r["fit"]["at_bound"]]
    if fits:
        ax.errorbar(t, [f["b_crit"] for f in fits],
                    yerr=_bars([f["b_crit"] for f in fits],
                               [f["b_crit_ci"] or (f["b_crit"], f["b_crit"]) for f in fits]),
                    marker="o", color="k", capsize=3, label="B_crit (fit)")
    for p, color in (("d", "tab:blue"), ("g", "tab:orange")):
        pts = [(r["target"], r["b_simple"][p]) for r in rows if r["b_simple"].get(p)]
        if pts:
            ax.errorbar([x for x, _ in pts], [n["geomean"] for _, n in pts],
                        yerr=_bars([n["geomean"] for _, n in pts],
                                   [(n["low"], n["high"]) for _, n in pts]), marker="s",
                        color=color,
                        capsize=3, label=f"B_simple {p.upper()}")
    ax.set(yscale="log", xlabel="IS target", ylabel="batch size",
           title="critical batch and noise scale vs target")
    finish(fig, ax, os.path.join(out_dir, arm_figure(arm, "b_crit")))
