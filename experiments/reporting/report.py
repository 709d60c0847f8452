"""A sweep's report, from records only: every section of sections/ computed, rendered and drawn.

Reads the points' files (config.json, metrics.json, eval_history.json, samples/samples.npz),
so a report can be rebuilt at any time, by the notebook too, without TensorFlow. Writes into
SWEEP/report/: report.md (every section), summary.json (the batch table's rows, also as
table.csv and table.tex), analysis.json (every other section's result under its KEY) and the
figures.
"""
from __future__ import annotations

import logging
import os

from common import files
from experiments import sweep_files
from experiments.config import StudyComparison
from experiments.reporting import sections
from experiments.reporting.lib import mccandlish
from experiments.reporting.sections import batch_table
from experiments.reporting.study import Study

log = logging.getLogger(__name__)

REPORT = "report.md"


def write_report(sweep_dir: str, comparison: StudyComparison | None = None,
                 bootstrap: int = mccandlish.BOOTSTRAP, out: str | None = None) -> dict:
    """`comparison`: what the report compares (None: the experiment config's); `out`: where
    (None: the sweep's report/)."""
    out = out or os.path.join(sweep_dir, sweep_files.REPORT)
    study = Study.load(sweep_dir, out, comparison, bootstrap)
    results, parts = {}, []
    for section in sections.discover():
        result = section.compute(study, results)
        if result is None:
            continue
        results[section.KEY] = result
        parts.append(section.render(result, study))
        if hasattr(section, "draw"):
            section.draw(result, study)
    rows = sections.json_values(results.pop(batch_table.KEY).rows)
    analysis, md = sections.json_values(results), "\n".join(parts)
    files.atomic_write_text(os.path.join(out, REPORT), md)
    files.atomic_write_text(os.path.join(out, "table.csv"), batch_table.csv_table(rows))
    files.atomic_write_text(os.path.join(out, "table.tex"),
                            batch_table.latex_table(rows, study.table_points,
                                                    study.comparison.baseline_batch))
    files.atomic_write_json(os.path.join(out, "summary.json"), rows)
    files.atomic_write_json(os.path.join(out, "analysis.json"), analysis)
    log.info(md)
    log.info("report written to %s", out)
    return dict(rows=rows, analysis=analysis, results=results, markdown=md, dir=out)
