"""The batch table: one row per global batch size (final and best scores over seeds, ratios to
the baseline batch with 95% Welch intervals), as Markdown, CSV and LaTeX with the protocol line
every score needs, and its figures. Its rows are summary.json."""
from __future__ import annotations

import csv
import io
import os
from collections import defaultdict
from dataclasses import dataclass, fields

import numpy as np

from experiments.records import Point, PointRecord
from experiments.reporting import environments
from experiments.reporting.lib import plots
from experiments.reporting.lib.markdown import plus_minus, table
from experiments.reporting.lib.metrics import COMPARED, METRICS, MeanSd, describe
from experiments.reporting.lib.seeds import (
    best_value,
    final_value,
    ratio_vs_baseline,
    replicate_values,
)
from experiments.reporting.lib.stats import RatioInterval
from experiments.reporting.sections import json_values

KEY, ORDER = "batch_table", 10

PAPER = {  # published numbers beside ours where the preset matches a paper setting
    "cifar10": "batch 64: IS 8.62, FID 17.5 (conditional SN-GAN with projection discriminator, "
               "arXiv 1802.05637, Table 1)",
    "imagenet128": "batch 64: IS 29.7 (SN-GAN projection, 450K it., sngan_projection README); "
                   "TF-Replicator: batch 64 -> 512 raised IS by about 50% (arXiv 1902.00465)",
}


def _fmt(v, digits=2, std=None):
    return plus_minus(v, std, f".{digits}f")


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
    """`rows`: summary.json's. KID's scale follows the feature norm: significant digits."""
    return [[str(r["batch"]), str(r["seeds"]), _fmt(r["is_mean"], 2, r["is_std"]),
             _fmt(r["fid"], 2, r["fid_std"]), plus_minus(r["kid"], r["kid_std"], ".3g", ".2g"),
             _fmt(r["acc"], 3, r["acc_std"]), _fmt(r["intra_fid"], 1),
             "-" if r["precision"] is None else f"{r['precision']:.2f} / {r['recall']:.2f}",
             _fmt(r["best_is"]), _fmt(r["best_fid"]), *(_ratio(r, m, baseline) for m in COMPARED),
             str(r["steps"]), f"{r['images_seen']:,}", f"{r['wall_time_s'] / 60:.1f}",
             str(r["diverged"])] for r in rows]


def protocol_text(points: list[Point]) -> str:
    done = [p for p in points if p.record.status == "done"]
    if not done:
        return "No finished points."
    p, cfg = done[0].record.final.protocol, done[0].config
    return (f"Protocol: {p.classifier} ({str(p.classifier_version)[:12]}), "
            f"{p.n_fake} generated vs {p.n_real} real ({cfg.data.name} {p.reference_split} "
            f"split), {p.is_splits} IS splits, resize {p.classifier_resize or 'none'}, generator "
            f"BN mode '{p.bn_mode}', eval seed {p.seed}, replicas {done[0].record.replicas}; "
            "± is the std over seeds (with one seed: over evaluation seeds, or IS splits and KID "
            f"subsets of one evaluation). Training: preset {cfg.preset}, precision "
            f"{cfg.train.precision}, n_dis {cfg.train.n_dis}, G ch {cfg.model.g_ch}, D ch "
            f"{cfg.model.d_ch}, seeds {sorted({q.record.seed for q in points})}. "
            + environments.line(points))


BN_MODES = ("The same final checkpoints scored with other generator BN modes while sampling "
            "(`moving`: running averages, as sngan_projection samples; `standing`: averages over "
            "fresh batches):")


def markdown_table(rows: list[dict], points, preset: str, baseline: int,
                   control_rows=()) -> str:
    """`rows`: summary.json's; `control_rows`: (label, such a row) of control arms (equal
    images), shown in the BN-mode table beside the table's own rows."""
    lines = [table(columns(baseline), table_cells(rows, baseline)), "",
             FOOTNOTE.format(baseline=baseline), "", protocol_text(points), ""]
    labelled = [(str(r["batch"]), r) for r in rows] + list(control_rows)
    modes = [[label, mode, str(m["seeds"]), _fmt(m["is_mean"]), _fmt(m["fid"]),
              _fmt(m["acc"], 3)] for label, r in labelled
             for mode, m in sorted(r["other_bn_modes"].items())]
    if modes:
        lines += [BN_MODES, "", table(["batch", "mode", "seeds", "IS", "FID", "accuracy"],
                                      modes), ""]
    lines += [f"Paper reference: {PAPER[preset]}."] if preset in PAPER else []
    return "\n".join(lines) + "\n"


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
    flat = [{**{k: v for k, v in r.items() if k != "other_bn_modes" and "_ratio_ci" not in k},
             **{f"{m}_ratio_{x}": (r[f"{m}_ratio_ci"] or {}).get(x) for m in COMPARED
                for x in ("low", "high", "df")}} for r in rows]
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(flat[0]) if flat else [])
    w.writeheader()
    w.writerows(flat)
    return out.getvalue()


@dataclass(frozen=True)
class BnModeScores:
    """Final checkpoints re-scored under the same protocol in another generator BN mode
    (`evaluate --bn-mode`), averaged over the seeds that have them."""
    seeds: int
    is_mean: float | None
    fid: float | None
    acc: float | None


@dataclass(frozen=True)
class BatchRow:
    """One global batch size: final scores over seeds (mean, sd), best scores, and the Welch
    ratio to the baseline batch of each compared metric; to_dict() is its summary.json row."""
    batch: int
    seeds: int
    done: int
    diverged: int
    steps: int
    images_seen: int
    wall_time_s: float
    scores: dict[str, MeanSd]  # by metric key
    is_std_kind: str  # what IS's sd is over: seeds, evaluation seeds or IS splits
    best_is: float | None
    best_fid: float | None
    ratios: dict[str, RatioInterval | None]  # by compared metric: vs the baseline batch
    other_bn_modes: dict[str, BnModeScores]

    def to_dict(self) -> dict:
        row = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in ("scores", "ratios")}
        for m, s in self.scores.items():
            row["is_mean" if m == "is" else m], row[f"{m}_std"] = s.mean, s.sd
        for m, ci in self.ratios.items():
            row[f"{m}_change_vs_baseline"] = None if ci is None else 100.0 * (ci.ratio - 1.0)
            row[f"{m}_ratio_ci"] = ci
        return row


ONE_EVALUATION_SD = {"is": "is_std", "kid": "kid_std"}  # Scores fields: over splits, subsets


def _score(done: list[PointRecord], metric: str) -> tuple[MeanSd, bool]:
    """Mean and sd over seeds; with one seed, the sd over its evaluation seeds, else over one
    evaluation's splits or subsets (True: that last fallback)."""
    d = describe(final_value(r, metric) for r in done)
    if len(done) != 1:
        return MeanSd(d.mean, d.sd), False
    sd = describe(replicate_values(done[0], metric)).sd
    if sd is None and metric in ONE_EVALUATION_SD:
        return MeanSd(d.mean, getattr(done[0].final, ONE_EVALUATION_SD[metric])), True
    return MeanSd(d.mean, sd), False


def batch_row(group: list[Point], base: list[PointRecord]) -> BatchRow:
    recs = [p.record for p in group]
    done = [r for r in recs if r.status == "done"]
    scores = {m: _score(done, m) for m in METRICS}
    kind = ("splits" if scores["is"][1] else "seeds" if len(done) > 1
            else "evaluation seeds")
    return BatchRow(
        recs[0].global_batch_size, len(recs), len(done),
        sum(r.status == "diverged" for r in recs), recs[0].steps, recs[0].images_seen,
        float(np.mean([r.train_wall_time_s + r.eval_wall_time_s for r in recs])),
        {m: s for m, (s, _) in scores.items()}, kind,
        describe(best_value(p, "is") for p in group).mean,
        describe(best_value(p, "fid") for p in group).mean,
        {m: ratio_vs_baseline(base, recs, m) if base else None for m in COMPARED},
        other_bn_modes(done))


def batch_rows(points: list[Point], baseline: int) -> list[BatchRow]:
    by_batch: dict[int, list[Point]] = defaultdict(list)
    for p in points:
        by_batch[p.record.global_batch_size].append(p)
    base = [p.record for p in by_batch.get(baseline, [])]
    return [batch_row(by_batch[b], base) for b in sorted(by_batch)]


def summarise(points: list[Point], baseline: int) -> list[dict]:
    """summary.json's rows."""
    return json_values(batch_rows(points, baseline))


def other_bn_modes(done: list[PointRecord]) -> dict[str, BnModeScores]:
    out = {}
    keys = sorted({k for r in done for k in r.evaluations
                   if r.final and k == f"{r.final.protocol.protocol}/{k.split('/')[-1]}"
                   and k.split("/")[-1] != r.final.protocol.bn_mode})
    for key in keys:
        scores = [r.evaluations[key] for r in done if key in r.evaluations]
        out[key.split("/")[-1]] = BnModeScores(
            len(scores), *(describe(getattr(s, f) for s in scores).mean
                           for f in ("is_mean", "fid", "accuracy")))
    return out


@dataclass(frozen=True)
class BatchTable:
    rows: list[BatchRow]  # the table's points (summary.json)
    controls: list[tuple[str, BatchRow]]  # (label, row) of the equal-images controls


def compute(study, earlier: dict) -> BatchTable:
    base = study.comparison.baseline_batch
    return BatchTable(batch_rows(study.table_points, base),
                      [(f"{r.batch} x {r.steps:,} (equal images)", r)
                       for r in batch_rows(study.controls, base)])


OTHER_PRECISIONS = ("Points of another precision ({left}) are left out of these comparisons, "
                    "which use the {main} points only (a comparison never mixes precisions); the "
                    "precision check compares them with their {main} twins.")


def render(result: BatchTable, study) -> str:
    preset = study.compared[0].config.preset if study.compared else ""
    md = markdown_table(json_values(result.rows), study.table_points, preset,
                        study.comparison.baseline_batch, json_values(result.controls))
    left = ", ".join(f"{n} in {name}" for name, n in study.other_precisions.items())
    return md + (f"\n{OTHER_PRECISIONS.format(left=left, main=study.main_precision)}\n"
                 if left else "")


def draw(result: BatchTable, study) -> None:
    out, points = study.out_dir, study.table_points
    plots.plot_vs_batch(json_values(result.rows), os.path.join(out, "is_fid_vs_batch.png"))
    plots.plot_curves(points, "step", os.path.join(out, "curves_vs_steps.png"),
                      "generator steps")
    plots.plot_curves(points, "images_seen", os.path.join(out, "curves_vs_images.png"),
                      "real images seen by D")
    plots.comparison(points, os.path.join(out, "comparison.png"))
