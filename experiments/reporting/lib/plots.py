"""Figures of a sweep: scores against batch size, learning curves, the comparison figure, the
equal-images curves, the time-to-target figures and B_simple against steps."""
from __future__ import annotations

import os
from collections import defaultdict

import matplotlib.ticker
import numpy as np

from experiments import grids
from experiments.class_names import class_name
from experiments.pyplot import plt
from experiments.records import Point


def shades(n: int, cmap: str = "viridis") -> list:
    """`n` colours spread over `cmap`, one per batch size (or target)."""
    return [plt.get_cmap(cmap)(i / max(n - 1, 1)) for i in range(n)]


def by_batch(items, batch_of=lambda p: p.record.global_batch_size) -> dict[int, list]:
    out = defaultdict(list)
    for x in items:
        out[batch_of(x)].append(x)
    return dict(sorted(out.items()))


def finish(fig, axes, path: str, legend=None) -> None:
    """The look every figure shares (grid; a legend on the axes `legend`, if any), then saved
    (PNG and PDF) and closed."""
    for ax in np.atleast_1d(axes):
        ax.grid(alpha=0.3)
    if legend is not None:
        legend.legend(fontsize=7)
    fig.tight_layout()
    grids.save_figure(fig, path)


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
        ax.set(xticks=b, xticklabels=[str(x) for x in b], xlabel="global batch size")
    finish(fig, (a1, a2), path)


def plot_curves(points: list[Point], x_key: str, path: str, xlabel: str):
    groups = by_batch(p for p in points if p.history)
    if not groups:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    for (batch, pts), color in zip(groups.items(), shades(len(groups))):
        h = sorted(pts[0].history, key=lambda e: e.step)  # the first seed
        x = [e.step if x_key == "step" else e.images_seen for e in h]
        a1.plot(x, [e.is_mean for e in h], marker=".", color=color, label=f"batch {batch}")
        a2.plot(x, [e.fid for e in h], marker=".", color=color, label=f"batch {batch}")
    a1.set_ylabel("IS")
    a2.set_ylabel("FID")
    for ax in (a1, a2):
        ax.set(xlabel=xlabel, xscale="log" if x_key == "images_seen" else "linear")
    finish(fig, (a1, a2), path, legend=a2)


def comparison(points: list[Point], path: str):
    rows, dataset, cls = {}, None, 0
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
    for arm, color in zip(arms, ("tab:blue", "tab:orange", "tab:green", "tab:red")):
        curves = [c for p in arm if (c := sorted((e for e in p.history if e.images_seen),
                                                  key=lambda e: e.images_seen))]
        if not curves:
            continue
        shared = sorted(set.intersection(*({e.images_seen for e in c} for c in curves)))
        rec = arm[0].record
        label = f"batch {rec.global_batch_size} x {rec.steps:,} steps (seeds: {len(curves)})"
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
    axes[0].legend(fontsize=7, title="mean; band: seed range", title_fontsize=7)
    finish(fig, axes, path)


# -- time to target ----------------------------------------------------------------------
# (file, alt text), each file prefixed with its arm's name
TIME_TO_TARGET_FIGURES = (("steps_vs_images.png", "steps vs images"),
                          ("is_vs_steps.png", "IS vs steps"),
                          ("b_crit_vs_target.png", "B_crit vs target"))


def _errorbar(ax, x, centres, intervals, **kw) -> None:
    """Error bars from (low, high) intervals; a percentile interval may miss its centre."""
    bars = np.array([[max(c - lo, 0.0), max(hi - c, 0.0)]
                     for c, (lo, hi) in zip(centres, intervals)]).T
    ax.errorbar(x, centres, yerr=bars, capsize=3, **kw)


def time_to_target_figures(result, points: list[Point], out_dir: str, arm: str) -> None:
    """S vs E per IS target with the fitted hyperbolas; IS vs steps with seed bands; B_crit
    and B_simple vs target. `result`: a sections.time_to_target.ArmResult."""
    rows, n_dis = result.metrics["is_mean"], result.n_dis
    hyperbolas, curves, b_crit = (os.path.join(out_dir, f"{arm}_{name}")
                                  for name, _ in TIME_TO_TARGET_FIGURES)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for r, color in zip(rows, shades(len(rows), "plasma")):
        for b, cs in r.crossings.items():
            for c in cs:
                ax.scatter(n_dis * int(b) * c.step, c.step, color=color, s=10,
                           marker="^" if c.censored else "o")
        if r.fit:
            bs = np.geomspace(min(result.batches) / 2, max(result.batches) * 2, 100)
            ax.plot(n_dis * bs * r.fit.steps(bs), r.fit.steps(bs), color=color,
                    label=f"IS {r.target:.1f}")
    ax.set(xscale="log", yscale="log", xlabel="real images seen by D (E)",
           ylabel="generator steps (S)", title="steps vs images to each IS target")
    finish(fig, ax, hyperbolas, legend=ax)

    fig, ax = plt.subplots(figsize=(6, 4))
    groups = by_batch(points)
    for (b, pts), color in zip(groups.items(), shades(len(groups))):
        steps = sorted(set.intersection(*[{e.step for e in p.history} for p in pts]))
        vals = np.array([[next(e.is_mean for e in p.history if e.step == s) for s in steps]
                         for p in pts])
        ax.plot(steps, vals.mean(0), color=color, label=f"batch {b} (seeds: {len(vals)})")
        ax.fill_between(steps, vals.min(0), vals.max(0), color=color, alpha=0.2)
    ax.set(xscale="log", xlabel="generator steps", ylabel="IS",
           title="IS at constant lr (band: seeds' range)")
    finish(fig, ax, curves, legend=ax)

    fig, ax = plt.subplots(figsize=(5.5, 4))
    fitted = [r for r in rows if r.fit and not r.fit.at_bound]
    if fitted:
        _errorbar(ax, [r.target for r in fitted], [r.fit.b_crit for r in fitted],
                  [r.fit.b_crit_ci or (r.fit.b_crit,) * 2 for r in fitted], marker="o",
                  color="k", label="B_crit (fit)")
    for p, color in (("d", "tab:blue"), ("g", "tab:orange")):
        got = [r for r in rows if r.b_simple[p]]
        if got:
            _errorbar(ax, [r.target for r in got], [r.b_simple[p].geomean for r in got],
                      [(r.b_simple[p].low, r.b_simple[p].high) for r in got], marker="s",
                      color=color, label=f"B_simple {p.upper()}")
    ax.set(yscale="log", xlabel="IS target", ylabel="batch size",
           title="critical batch and noise scale vs target")
    finish(fig, ax, b_crit, legend=ax)


def noise_scale_figure(found, path: str) -> None:
    """B_simple (smoothed) of D and G against training steps, one line per batch size (its
    first measurement). `found`: sections.noise_scale.Measurement list."""
    groups = by_batch(found, lambda m: m.batch)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, player in zip(axes, ("d", "g")):
        for (batch, ms), color in zip(groups.items(), shades(len(groups))):
            s = ms[0].series[player]
            xy = [(x, y) for x, y in zip(s["steps"], s["b_simple"]) if y is not None and y > 0]
            if xy:
                ax.plot(*zip(*xy), color=color, label=f"batch {batch}")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set(xlabel="generator steps", title=f"{player.upper()}: B_simple = tr(Σ)/|G|² (EMA)")
    axes[0].set_ylabel("gradient noise scale")
    finish(fig, axes, path, legend=axes[1])
