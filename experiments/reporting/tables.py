"""The sweep table as Markdown, CSV and LaTeX, with the protocol line every score needs."""
from __future__ import annotations

import csv
import io

from experiments.config import BASELINE_BATCH
from experiments.records import Point
from experiments.reporting import environments

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


def _ratio(row, key):
    """'+12.3% [+1.0, +25.1] df 3.6': change vs batch 64 with the 95% Welch interval."""
    change, ci = row.get(f"{key}_change_vs_64"), row.get(f"{key}_ratio_ci")
    if change is None:
        return "-"
    if row["batch"] == BASELINE_BATCH:
        return "baseline"
    if not ci or ci["low"] != ci["low"]:  # NaN: no interval
        return f"{change:+.1f}%"
    df = f" df {ci['df']:.1f}" if ci.get("df") is not None else ""
    return (f"{change:+.1f}% [{100 * (ci['low'] - 1):+.1f}, {100 * (ci['high'] - 1):+.1f}]"
            f"{df}")


COLUMNS = ["batch", "seeds", "IS", "FID", "KID", "accuracy", "intra-FID", "precision / recall",
           "best IS*", "best FID*", "IS vs 64 [95% CI]", "FID vs 64 [95% CI]",
           "accuracy vs 64 [95% CI]", "steps", "images seen", "wall time (min)",
           "diverged"]
FOOTNOTE = ("Scores are final (last step); * best during training, an optimistic figure. "
            "Changes vs batch 64: ratio of geometric means over seeds with its 95% Welch "
            "t-interval on log values (seeds as independent runs) and the Welch degrees of "
            "freedom; with one seed per batch size, over evaluation seeds of the same "
            "checkpoints (evaluation noise only).")


def table_cells(rows: list[dict]) -> list[list[str]]:
    cells = []
    for r in rows:
        pr = ("-" if r["precision"] is None
              else f"{r['precision']:.2f} / {r['recall']:.2f}")
        cells.append([str(r["batch"]), str(r["seeds"]), _fmt(r["is_mean"], 2, r["is_std"]),
                      _fmt(r["fid"], 2, r["fid_std"]), _fmt_g(r["kid"], r["kid_std"]),
                      _fmt(r["acc"], 3, r["acc_std"]), _fmt(r["intra_fid"], 1), pr,
                      _fmt(r["best_is"], 2), _fmt(r["best_fid"], 2), _ratio(r, "is"),
                      _ratio(r, "fid"), _ratio(r, "acc"), str(r["steps"]),
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


def markdown_table(rows, points, preset: str, control_rows=()) -> str:
    """`control_rows`: (label, summary row) of control arms (equal images), shown in the BN-mode
    table beside the table's own rows."""
    out = io.StringIO()
    out.write("| " + " | ".join(COLUMNS) + " |\n")
    out.write("|" + "---|" * len(COLUMNS) + "\n")
    for cells in table_cells(rows):
        out.write("| " + " | ".join(cells) + " |\n")
    out.write("\n" + FOOTNOTE + "\n\n" + protocol_text(points) + "\n")
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


def latex_table(rows, points) -> str:
    def esc(s):
        return s.replace("%", r"\%").replace("±", r"$\pm$").replace("_", r"\_")
    lines = [r"\begin{tabular}{" + "r" * len(COLUMNS) + "}", r"\toprule",
             " & ".join(esc(c) for c in COLUMNS) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(c) for c in cells) + r" \\" for cells in table_cells(rows)]
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
