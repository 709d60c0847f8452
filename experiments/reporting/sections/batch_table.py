"""The batch table: one row per global batch size (final and best scores over seeds, ratios to
the baseline batch with 95% Welch intervals), as Markdown, CSV and LaTeX with the protocol line
every score needs, and its figures. Its rows are summary.json."""
from __future__ import annotations

import csv
import io
import os
from collections import defaultdict

import numpy as np

from experiments.records import Point, PointRecord
from experiments.reporting import environments
from experiments.reporting.lib import plots
from experiments.reporting.lib.metrics import COMPARED, METRICS, describe
from experiments.reporting.lib.seeds import (
    best_value,
    final_value,
    ratio_vs_baseline,
    replicate_values,
)

KEY, ORDER = "batch_table", 10

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


def _ratio(row, key, baseline):
    """'+12.3% [+1.0, +25.1] df 3.6': change vs the baseline with the 95% Welch interval."""
    change, ci = row.get(f"{key}_change_vs_baseline"), row.get(f"{key}_ratio_ci")
    if change is None:
        return "-"
    if row["batch"] == baseline:
        return "baseline"
    if not ci or ci["low"] != ci["low"]:  # NaN: no interval
        return f"{change:+.1f}%"
    df = f" df {ci['df']:.1f}" if ci.get("df") is not None else ""
    return (f"{change:+.1f}% [{100 * (ci['low'] - 1):+.1f}, {100 * (ci['high'] - 1):+.1f}]"
            f"{df}")


def columns(baseline: int) -> list[str]:
    return ["batch", "seeds", "IS", "FID", "KID", "accuracy", "intra-FID", "precision / recall",
            "best IS*", "best FID*", f"IS vs {baseline} [95% CI]", f"FID vs {baseline} [95% CI]",
            f"accuracy vs {baseline} [95% CI]", "steps", "images seen", "wall time (min)",
            "diverged"]


FOOTNOTE = ("Scores are final (last step); * best during training, an optimistic figure. "
            "Changes vs batch {baseline}: ratio of geometric means over seeds with its 95% Welch "
            "t-interval on log values (seeds as independent runs) and the Welch degrees of "
            "freedom; with one seed per batch size, over evaluation seeds of the same "
            "checkpoints (evaluation noise only).")


def table_cells(rows: list[dict], baseline: int) -> list[list[str]]:
    cells = []
    for r in rows:
        pr = ("-" if r["precision"] is None
              else f"{r['precision']:.2f} / {r['recall']:.2f}")
        cells.append([str(r["batch"]), str(r["seeds"]), _fmt(r["is_mean"], 2, r["is_std"]),
                      _fmt(r["fid"], 2, r["fid_std"]), _fmt_g(r["kid"], r["kid_std"]),
                      _fmt(r["acc"], 3, r["acc_std"]), _fmt(r["intra_fid"], 1), pr,
                      _fmt(r["best_is"], 2), _fmt(r["best_fid"], 2), _ratio(r, "is", baseline),
                      _ratio(r, "fid", baseline), _ratio(r, "acc", baseline), str(r["steps"]),
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
    std_kind = ("std over seeds" if len(seeds) > 1 else
                "std over evaluation seeds (over IS splits where there is one evaluation)")
    return (f"Protocol: {p.classifier} ({str(p.classifier_version)[:12]}), "
            f"{p.n_fake} generated vs {p.n_real} real "
            f"({cfg.data.name} {p.reference_split} split), "
            f"{p.is_splits} IS splits, resize {p.classifier_resize or 'none'}, "
            f"generator BN mode '{p.bn_mode}', eval seed {p.seed}, "
            f"{done[0].record.replicas} replica(s); IS ± is the {std_kind}; KID ± over subsets "
            f"(one seed) or seeds. Training: preset {cfg.preset}, "
            f"precision {getattr(cfg.train, 'precision', 'float32')}, n_dis {cfg.train.n_dis}, "
            f"G ch {cfg.model.g_ch}, D ch {cfg.model.d_ch}, seeds {seeds}. "
            + environments.line(points))


def markdown_table(rows, points, preset: str, baseline: int, control_rows=()) -> str:
    """`control_rows`: (label, summary row) of control arms (equal images), shown in the BN-mode
    table beside the table's own rows."""
    out = io.StringIO()
    out.write("| " + " | ".join(columns(baseline)) + " |\n")
    out.write("|" + "---|" * len(columns(baseline)) + "\n")
    for cells in table_cells(rows, baseline):
        out.write("| " + " | ".join(cells) + " |\n")
    out.write("\n" + FOOTNOTE.format(baseline=baseline) + "\n\n" + protocol_text(points)
              + "\n")
    out.write(bn_mode_table(rows, control_rows))
    ref = PAPER_REFERENCE.get(preset)
    if ref:
        out.write("\nPaper reference:\n")
        for batch, v in ref.items():
            out.write(f"- batch {batch}: IS {v['is_mean']}, FID {v['fid'] or '-'} "
                      f"({v['source']})\n")
    if preset in PAPER_TREND:
        out.write(f"- {PAPER_TREND[preset]}\n")
    return out.getvalue()


def bn_mode_table(rows, control_rows=()) -> str:
    """Final checkpoints re-scored with other generator BN modes, beside the main mode."""
    labelled = [(str(r["batch"]), r) for r in rows] + list(control_rows)
    modes = sorted({m for _, r in labelled for m in r.get("other_bn_modes", {})})
    if not modes:
        return ""
    out = io.StringIO()
    out.write("\nThe same final checkpoints scored with other generator BN modes while sampling "
              "(`moving`: running averages, as sngan_projection samples; `standing`: averages "
              "over fresh batches):\n\n| batch | mode | seeds | IS | FID | accuracy |\n"
              "|---|---|---|---|---|---|\n")
    for label, r in labelled:
        for mode in modes:
            m = r.get("other_bn_modes", {}).get(mode)
            if m:
                out.write(f"| {label} | {mode} | {m['seeds']} | {_fmt(m['is_mean'])} | "
                          f"{_fmt(m['fid'])} | {_fmt(m['acc'], 3)} |\n")
    return out.getvalue()


def latex_table(rows, points, baseline: int) -> str:
    def esc(s):
        return s.replace("%", r"\%").replace("±", r"$\pm$").replace("_", r"\_")
    cols = columns(baseline)
    lines = [r"\begin{tabular}{" + "r" * len(cols) + "}", r"\toprule",
             " & ".join(esc(c) for c in cols) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(c) for c in cells) + r" \\"
              for cells in table_cells(rows, baseline)]
    lines += [r"\bottomrule", r"\end{tabular}", "", "% " + protocol_text(points)]
    return "\n".join(lines) + "\n"


def csv_table(rows) -> str:
    """Flat columns: the ratio intervals become *_ratio_low / *_ratio_high / *_ratio_df."""
    flat = []
    for r in rows:
        row = {k: v for k, v in r.items()
               if not k.endswith("_ratio_ci") and k != "other_bn_modes"}
        for key in ("is", "fid", "acc"):
            ci = r.get(f"{key}_ratio_ci") or {}
            row[f"{key}_ratio_low"], row[f"{key}_ratio_high"] = ci.get("low"), ci.get("high")
            row[f"{key}_ratio_df"] = ci.get("df")
        flat.append(row)
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(flat[0]) if flat else [])
    w.writeheader()
    for r in flat:
        w.writerow(r)
    return out.getvalue()


def _mean_std(values):
    d = describe(values)
    return d.mean, d.sd


def summarise(points: list[Point], baseline: int) -> list[dict]:
    by_batch: dict[int, list[Point]] = defaultdict(list)
    for p in points:
        by_batch[p.record.global_batch_size].append(p)
    base = [p.record for p in by_batch.get(baseline, [])]
    rows = []
    for batch in sorted(by_batch):
        group = by_batch[batch]
        recs = [p.record for p in group]
        done = [r for r in recs if r.status == "done"]
        row = dict(batch=batch, seeds=len(recs), done=len(done),
                   diverged=sum(r.status == "diverged" for r in recs),
                   steps=recs[0].steps, images_seen=recs[0].images_seen,
                   wall_time_s=float(np.mean([r.train_wall_time_s + r.eval_wall_time_s
                                              for r in recs])))
        for metric in METRICS:
            mean, std = _mean_std(final_value(r, metric) for r in done)
            if len(done) == 1 and std is None:  # one seed: spread over evaluation seeds
                std = _mean_std(replicate_values(done[0], metric))[1]
            row[metric], row[f"{metric}_std"] = mean, std
        row["is_mean"] = row.pop("is")
        row["is_std_kind"] = "seeds" if len(done) > 1 else "evaluation seeds"
        if len(done) == 1 and row["is_std"] is None:
            row["is_std"], row["is_std_kind"] = done[0].final.is_std, "splits"
        row["kid_std"] = row["kid_std"] if len(done) > 1 or row["kid_std"] is not None \
            else (done[0].final.kid_std if done else None)
        row["best_is"] = _mean_std(best_value(p, "is") for p in group)[0]
        row["best_fid"] = _mean_std(best_value(p, "fid") for p in group)[0]
        for metric in COMPARED:
            ci = ratio_vs_baseline(base, recs, metric) if base else None
            row[f"{metric}_change_vs_baseline"] = None if ci is None else 100.0 * (ci.ratio - 1.0)
            row[f"{metric}_ratio_ci"] = None if ci is None else ci.to_dict()
        row["other_bn_modes"] = other_bn_modes(done)
        rows.append(row)
    return rows


def other_bn_modes(done: list[PointRecord]) -> dict:
    """Re-scorings of the final checkpoints under the same protocol in other generator BN
    modes (`evaluate --bn-mode`), averaged over the seeds that have them."""
    out = {}
    keys = sorted({k for r in done for k in r.evaluations
                   if r.final and k == f"{r.final.protocol.protocol}/{k.split('/')[-1]}"
                   and k.split("/")[-1] != r.final.protocol.bn_mode})
    for key in keys:
        scores = [r.evaluations[key] for r in done if key in r.evaluations]
        out[key.split("/")[-1]] = dict(
            seeds=len(scores), is_mean=_mean_std(s.is_mean for s in scores)[0],
            fid=_mean_std(s.fid for s in scores)[0], acc=_mean_std(s.accuracy for s in scores)[0])
    return out


def _steps(points, batch: int) -> int:
    return max(p.record.steps for p in points if p.record.global_batch_size == batch)


def compute(study, earlier: dict) -> dict:
    """{'rows': the table's rows (summary.json), 'controls': [(label, row)] of the
    equal-images controls}."""
    base = study.comparison.baseline_batch
    controls = [(f"{r['batch']} x {_steps(study.controls, r['batch']):,} (equal images)", r)
                for r in summarise(study.controls, base)] if study.controls else []
    return dict(rows=summarise(study.table_points, base), controls=controls)


def render(result: dict, study) -> str:
    preset = study.compared[0].config.preset if study.compared else ""
    md = markdown_table(result["rows"], study.table_points, preset,
                        study.comparison.baseline_batch, result["controls"])
    if study.other_precisions:
        left = ", ".join(f"{n} in {name}" for name, n in study.other_precisions.items())
        md += (f"\nPoints of another precision ({left}) are left out of these comparisons, "
               f"which use the {study.main_precision} points only (a comparison never mixes "
               "precisions); the precision check compares them with their "
               f"{study.main_precision} twins.\n")
    return md


def draw(result: dict, study) -> None:
    out, rows, points = study.out_dir, result["rows"], study.table_points
    plots.plot_vs_batch(rows, os.path.join(out, "is_fid_vs_batch.png"))
    plots.plot_curves(points, "step", os.path.join(out, "curves_vs_steps.png"),
                      "generator steps")
    plots.plot_curves(points, "images_seen", os.path.join(out, "curves_vs_images.png"),
                      "real images seen by D")
    plots.comparison(points, os.path.join(out, "comparison.png"))
