"""Tables (Markdown, CSV, LaTeX), plots and the comparison figure for a sweep directory.

Reads only the points' `metrics.json` and `samples/samples.npz`, so a report can be rebuilt at
any time (and by the notebook) without TensorFlow.
"""
from __future__ import annotations

import csv
import io
import logging
import math
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from common import files  # noqa: E402
from experiments import grids, records  # noqa: E402
from experiments.class_names import class_name  # noqa: E402
from experiments.config import BASELINE_BATCH  # noqa: E402
from experiments.records import Point  # noqa: E402

log = logging.getLogger(__name__)

# Published numbers beside ours where the preset matches a paper setting.
PAPER_REFERENCE = {
    "cifar10": {64: dict(is_mean=8.62, fid=17.5,
                         source="conditional SN-GAN with projection discriminator "
                                "(arXiv 1802.05637, Table 1)")},
    "imagenet128": {64: dict(is_mean=29.7, fid=None,
                             source="SN-GAN projection, 450K it. (sngan_projection README)")},
}
PAPER_TREND = {
    "imagenet128": "TF-Replicator: batch 64 -> 512 raised IS by about 50% (arXiv 1902.00465)",
}


def _mean_std(values):
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return None, None
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)


def summarise(points: list[Point]) -> list[dict]:
    """One row per global batch size: scores averaged over seeds."""
    by_batch = defaultdict(list)
    for p in points:
        by_batch[p.record.global_batch_size].append(p.record)
    rows = []
    for batch in sorted(by_batch):
        group = by_batch[batch]
        done = [r for r in group if r.status == "done"]
        s = [r.final for r in done]
        is_mean, is_seed_std = _mean_std([x.is_mean for x in s])
        row = dict(batch=batch, seeds=len(group), done=len(done),
                   diverged=sum(r.status == "diverged" for r in group),
                   is_mean=is_mean,
                   # across seeds when there are several, else the spread over IS splits
                   is_std=is_seed_std if len(s) > 1 else (s[0].is_std if s else None),
                   is_std_kind="seeds" if len(s) > 1 else "splits",
                   fid=_mean_std([x.fid for x in s])[0],
                   fid_std=_mean_std([x.fid for x in s])[1],
                   kid=_mean_std([x.kid_mean for x in s])[0],
                   kid_std=_mean_std([x.kid_mean for x in s])[1]
                   if len(s) > 1 else (s[0].kid_std if s else None),
                   steps=group[0].steps, images_seen=group[0].images_seen,
                   wall_time_s=float(np.mean([r.train_wall_time_s + r.eval_wall_time_s
                                              for r in group])))
        rows.append(row)
    base = next((r for r in rows if r["batch"] == BASELINE_BATCH and r["is_mean"]), None)
    for row in rows:
        row["is_change_vs_64"] = (100.0 * (row["is_mean"] / base["is_mean"] - 1.0)
                                  if base and row["is_mean"] else None)
        row["fid_change_vs_64"] = (100.0 * (row["fid"] / base["fid"] - 1.0)
                                   if base and row["fid"] else None)
    return rows


def _fmt(v, digits=2, std=None):
    if v is None:
        return "-"
    text = f"{v:.{digits}f}"
    return text + (f" ± {std:.{digits}f}" if std is not None else "")


def _fmt_g(v, std=None):
    """KID's scale follows the feature norm, so print significant digits, not decimals."""
    if v is None:
        return "-"
    return f"{v:.3g}" + (f" ± {std:.2g}" if std is not None else "")


def _pct(v):
    return "-" if v is None else f"{v:+.1f}%"


COLUMNS = ["batch", "seeds", "IS", "FID", "KID", "IS vs 64", "FID vs 64", "steps",
           "images seen", "wall time (min)", "diverged"]


def table_cells(rows: list[dict]) -> list[list[str]]:
    cells = []
    for r in rows:
        cells.append([str(r["batch"]), str(r["seeds"]), _fmt(r["is_mean"], 2, r["is_std"]),
                      _fmt(r["fid"], 2, r["fid_std"]), _fmt_g(r["kid"], r["kid_std"]),
                      _pct(r["is_change_vs_64"]), _pct(r["fid_change_vs_64"]), str(r["steps"]),
                      f"{r['images_seen']:,}", f"{r['wall_time_s'] / 60:.1f}",
                      str(r["diverged"])])
    return cells


def protocol_text(points: list[Point]) -> str:
    done = [p for p in points if p.record.status == "done"]
    if not done:
        return "No finished points."
    p = done[0].record.final.protocol
    cfg = done[0].config
    seeds = sorted({q.record.seed for q in points})
    std_kind = "std over seeds" if len(seeds) > 1 else f"std over {p.is_splits} IS splits"
    return (f"Protocol: {p.classifier} ({str(p.classifier_version)[:12]}), "
            f"{p.n_fake} generated vs {p.n_real} real "
            f"({cfg.data.name} {p.reference_split} split), "
            f"{p.is_splits} IS splits, resize {p.classifier_resize or 'none'}, "
            f"generator BN mode '{p.bn_mode}', eval seed {p.seed}, "
            f"{done[0].record.replicas} replica(s); IS ± is the {std_kind}; KID ± over subsets "
            f"(one seed) or seeds. Training: preset {cfg.preset}, n_dis {cfg.train.n_dis}, "
            f"G ch {cfg.model.g_ch}, D ch {cfg.model.d_ch}, seeds {seeds}.")


def markdown_table(rows, points, preset: str) -> str:
    out = io.StringIO()
    out.write("| " + " | ".join(COLUMNS) + " |\n")
    out.write("|" + "---|" * len(COLUMNS) + "\n")
    for cells in table_cells(rows):
        out.write("| " + " | ".join(cells) + " |\n")
    out.write("\n" + protocol_text(points) + "\n")
    ref = PAPER_REFERENCE.get(preset)
    if ref:
        out.write("\nPaper reference:\n")
        for batch, v in ref.items():
            out.write(f"- batch {batch}: IS {v['is_mean']}, FID {v['fid'] or '-'} "
                      f"({v['source']})\n")
    if preset in PAPER_TREND:
        out.write(f"- {PAPER_TREND[preset]}\n")
    return out.getvalue()


def latex_table(rows, points) -> str:
    def esc(s):
        return s.replace("%", r"\%").replace("±", r"$\pm$").replace("_", r"\_")
    lines = [r"\begin{tabular}{" + "r" * len(COLUMNS) + "}", r"\toprule",
             " & ".join(esc(c) for c in COLUMNS) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(c) for c in cells) + r" \\" for cells in table_cells(rows)]
    lines += [r"\bottomrule", r"\end{tabular}", "", "% " + protocol_text(points)]
    return "\n".join(lines) + "\n"


def csv_table(rows) -> str:
    out = io.StringIO()
    keys = list(rows[0].keys()) if rows else []
    w = csv.DictWriter(out, fieldnames=keys)
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return out.getvalue()


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


def write_report(sweep_dir: str) -> dict:
    points = records.load_points(sweep_dir)
    out = os.path.join(sweep_dir, "report")
    rows = summarise(points)
    preset = points[0].config.preset if points else ""
    md = markdown_table(rows, points, preset)
    files.atomic_write_text(os.path.join(out, "table.md"), md)
    files.atomic_write_text(os.path.join(out, "table.csv"), csv_table(rows))
    files.atomic_write_text(os.path.join(out, "table.tex"), latex_table(rows, points))
    files.atomic_write_json(os.path.join(out, "summary.json"), rows)
    plot_vs_batch(rows, os.path.join(out, "is_fid_vs_batch.png"))
    plot_curves(points, "step", os.path.join(out, "curves_vs_steps.png"), "generator steps")
    plot_curves(points, "images_seen", os.path.join(out, "curves_vs_images.png"),
                "real images seen by D")
    comparison(points, os.path.join(out, "comparison.png"))
    log.info(md)
    log.info("report written to %s", out)
    return dict(rows=rows, markdown=md, dir=out)
