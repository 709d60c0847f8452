"""A sweep's report: tables, statistics, plots and the comparison figure, from records only.

Reads the points' files (config.json, metrics.json, eval_history.json, samples/samples.npz),
so a report can be rebuilt at any time, by the notebook too, without TensorFlow. The batch
table holds the points of one budget; equal-images control points in the same directory get
their own comparison and figure (analysis.py).
"""
from __future__ import annotations

import logging
import os

from common import files
from experiments import records
from experiments.reporting.lib import plots
from experiments.reporting.lib import seeds as summary
from experiments.reporting.sections import batch_table as tables
from experiments.reporting.sections import noise_scale as critical_batch
from experiments.reporting.sections import precision as precision_check
from experiments.reporting.sections import time_to_target as time_to_target_report
from experiments.reporting.sections import verdicts as analysis

log = logging.getLogger(__name__)

EQUAL_IMAGES_FIGURE = "equal_images.png"


def _equal_images_figure(points, result: dict, out: str) -> None:
    """The figure of the equal-images comparison, when the analysis found one."""
    for c in result["comparisons"]:
        if c["name"] != summary.EQUAL_IMAGES or c["baseline"]["batch"] == c["target"]["batch"]:
            continue
        arms = []
        for arm in (c["baseline"], c["target"]):
            chosen = {}
            for p in points:  # a labelled control wins its seed's slot, as in the analysis
                r = p.record
                if (r.status == "done" and r.global_batch_size == arm["batch"]
                        and r.images_seen == arm["images_seen"] and r.seed in arm["seeds"]
                        and (r.seed not in chosen
                             or summary.budget(r) == summary.EQUAL_IMAGES)):
                    chosen[r.seed] = p
            arms.append([chosen[s] for s in sorted(chosen)])
        plots.equal_images_curves(arms, os.path.join(out, EQUAL_IMAGES_FIGURE))


def _steps(points, batch: int) -> int:
    return max(p.record.steps for p in points if p.record.global_batch_size == batch)


def write_report(sweep_dir: str) -> dict:
    loaded = records.load_points(sweep_dir)
    # time-to-target arms (each batch its own steps) have their own section, never the table's
    every_point, _ = time_to_target_report.split_arms(
        loaded, time_to_target_report.time_to_target_arms(sweep_dir))
    # one precision per comparison; the others meet it in the precision check only
    points, left_out = precision_check.split_by_precision(every_point)
    table_points, control_points = summary.split_by_budget(points)
    out = os.path.join(sweep_dir, "report")
    rows = summary.summarise(table_points)
    control_rows = [(f"{r['batch']} x {_steps(control_points, r['batch']):,} (equal images)", r)
                    for r in summary.summarise(control_points)] if control_points else []
    result = analysis.analyse(points)
    preset = points[0].config.preset if points else ""
    sections = [tables.markdown_table(rows, table_points, preset, control_rows)
                + (f"\n{left_out}\n" if left_out else ""),
                analysis.analysis_markdown(result)]
    # further sections (each a Markdown string starting with '## ') are appended here
    target_md, target_result = time_to_target_report.section(sweep_dir, loaded, out)
    sections.append(critical_batch.critical_batch_markdown(points, sweep_dir, out,
                                                           target_result))
    check = precision_check.precision_check_markdown(every_point)
    if check:
        sections.append(check)
        result["precision_check"] = precision_check.check(every_point)
    if target_md:
        sections.append(target_md)
        result["time_to_target"] = target_result
    md = "\n".join(sections)
    files.atomic_write_text(os.path.join(out, "table.md"), md)
    files.atomic_write_text(os.path.join(out, "table.csv"), tables.csv_table(rows))
    files.atomic_write_text(os.path.join(out, "table.tex"),
                            tables.latex_table(rows, table_points))
    files.atomic_write_json(os.path.join(out, "summary.json"), rows)
    files.atomic_write_json(os.path.join(out, "analysis.json"), result)
    plots.plot_vs_batch(rows, os.path.join(out, "is_fid_vs_batch.png"))
    plots.plot_curves(table_points, "step", os.path.join(out, "curves_vs_steps.png"),
                      "generator steps")
    plots.plot_curves(table_points, "images_seen", os.path.join(out, "curves_vs_images.png"),
                      "real images seen by D")
    plots.comparison(table_points, os.path.join(out, "comparison.png"))
    _equal_images_figure(points, result, out)
    log.info(md)
    log.info("report written to %s", out)
    return dict(rows=rows, analysis=result, markdown=md, dir=out)
