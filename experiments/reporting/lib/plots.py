"""Figures of a sweep: scores against batch size, learning curves, the comparison figure."""
from __future__ import annotations

import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from experiments import grids  # noqa: E402
from experiments.class_names import class_name  # noqa: E402
from experiments.records import Point  # noqa: E402


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
