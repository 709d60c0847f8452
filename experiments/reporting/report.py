"""A sweep's report: tables, statistics, plots and the comparison figure, from records only.

Reads the points' files (config.json, metrics.json, eval_history.json, samples/samples.npz),
so a report can be rebuilt at any time, by the notebook too, without TensorFlow.
"""
from __future__ import annotations

import logging
import os

from common import files
from experiments import records
from experiments.reporting import analysis, plots, summary, tables

log = logging.getLogger(__name__)


def write_report(sweep_dir: str) -> dict:
    points = records.load_points(sweep_dir)
    out = os.path.join(sweep_dir, "report")
    rows = summary.summarise(points)
    result = analysis.analyse(points)
    preset = points[0].config.preset if points else ""
    md = tables.markdown_table(rows, points, preset) + "\n" + analysis.analysis_markdown(result)
    files.atomic_write_text(os.path.join(out, "table.md"), md)
    files.atomic_write_text(os.path.join(out, "table.csv"), tables.csv_table(rows))
    files.atomic_write_text(os.path.join(out, "table.tex"), tables.latex_table(rows, points))
    files.atomic_write_json(os.path.join(out, "summary.json"), rows)
    files.atomic_write_json(os.path.join(out, "analysis.json"), result)
    plots.plot_vs_batch(rows, os.path.join(out, "is_fid_vs_batch.png"))
    plots.plot_curves(points, "step", os.path.join(out, "curves_vs_steps.png"),
                      "generator steps")
    plots.plot_curves(points, "images_seen", os.path.join(out, "curves_vs_images.png"),
                      "real images seen by D")
    plots.comparison(points, os.path.join(out, "comparison.png"))
    log.info(md)
    log.info("report written to %s", out)
    return dict(rows=rows, analysis=result, markdown=md, dir=out)
