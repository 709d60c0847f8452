"""Renders the committed report's numbers into README.md and docs/study.md.

    python -m experiments.reporting.build_docs [--check]

The two files are hand-written prose with generated blocks between `<!-- results: NAME -->`
and `<!-- /results: NAME -->` (common/marked_blocks.py, as docs/benchmarks.md's): the batch
tables from results/fashion_mnist/report/summary.json, the time-to-target headline and the
noise-scale counts from its analysis.json, each in the report's own templates. --check exits 1
if a block is not what the committed report renders to.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from common import files, marked_blocks
from experiments import configs
from experiments.reporting.lib import markdown
from experiments.reporting.lib.metrics import describe
from experiments.reporting.sections import batch_table
from experiments.reporting.sections import time_to_target as ttt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "results", "fashion_mnist", "report")
DOCS = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "study.md")]
TAG = "results"
SHORT = ("batch", "IS", "FID", "accuracy")  # the README's table: these, then the changes
ARM = configs.comparison("fashion_mnist_reference").headline_arm  # the committed study's


def load(report_dir: str = REPORT) -> tuple[list[dict], dict]:
    with open(os.path.join(report_dir, "summary.json")) as f:
        rows = json.load(f)
    with open(os.path.join(report_dir, "analysis.json")) as f:
        return rows, json.load(f)


def _batch_table(rows, analysis) -> str:
    base = analysis["verdicts"]["baseline_batch"]
    return markdown.table(batch_table.columns(base), batch_table.table_cells(rows, base))


def _batch_table_short(rows, analysis) -> str:
    base = analysis["verdicts"]["baseline_batch"]
    cols = batch_table.columns(base)
    keep = [cols.index(c) for c in SHORT] + [i for i, c in enumerate(cols) if " vs " in c]
    cells = batch_table.table_cells(rows, base)
    for r, row in zip(rows, cells):  # FID in whole numbers here
        row[cols.index("FID")] = batch_table._fmt(r["fid"], 0, r["fid_std"])
    return markdown.table([cols[i] for i in keep], [[row[i] for i in keep] for row in cells])


def _bn_modes(rows, analysis) -> str:
    return markdown.table(
        ["batch", "mode", "seeds", "IS", "FID", "accuracy"],
        [[str(r["batch"]), mode, str(m["seeds"]), batch_table._fmt(m["is_mean"]),
          batch_table._fmt(m["fid"]), batch_table._fmt(m["acc"], 3)]
         for r in rows for mode, m in sorted(r.get("other_bn_modes", {}).items())])


def _headline(rows, analysis) -> str:
    return ttt.headline_text(analysis[ttt.KEY][ARM]["headline"], ARM)


def _noise_scale(rows, analysis) -> str:
    return "\n".join(ttt.noise_text(analysis[ttt.KEY][ARM]["noise_scale"]))


def _time_to_target_table(rows, analysis) -> str:
    """Whole IS targets: steps at the smallest, baseline and bigger batches (but the first),
    B_crit and the practical table's savings."""
    r = analysis[ttt.KEY][ARM]
    c = configs.comparison("fashion_mnist_reference")
    shown = [min(r["batches"]), c.baseline_batch, *c.bigger_batches[1:]]
    head = ["IS target", "steps at " + " / ".join(map(str, shown)), "B_crit [95% bootstrap]"]
    for b in c.bigger_batches[1:]:
        head += [f"{c.baseline_batch} -> {b}: steps saved", "images spent"]
    cells = []
    for t in r["metrics"]["is_mean"]:
        if t["target"] != int(t["target"]) or t["target"] < 4:
            continue
        steps = [describe([x["step"] for x in t["crossings"][str(b)]]).geomean for b in shown]
        ups = {u["batch"]: u for u in t["speedups"]}
        row = [f"{t['target']:.1f}", " / ".join(f"{s:,.0f}" for s in steps),
               f"{t['fit']['b_crit']:.0f}{ttt.ci_text(t['fit']['b_crit_ci'])}"]
        for b in c.bigger_batches[1:]:
            row += [f"{ups[b]['steps_saved']:.2f}x{ttt.ci_text(ups[b]['ci'], '.2f')}",
                    f"{ups[b]['images_spent']:.2f}x"]
        cells.append(row)
    return markdown.table(head, cells)


BLOCKS = {"time_to_target": _time_to_target_table, "batch_table": _batch_table,
          "batch_table_short": _batch_table_short,
          "bn_modes": _bn_modes, "headline": _headline, "noise_scale": _noise_scale}


def rebuild(text: str, rows: list[dict], analysis: dict) -> str:
    def render(name: str) -> str:
        if name not in BLOCKS:
            raise SystemExit(f"docs block '{name}' is not one of {sorted(BLOCKS)}")
        return BLOCKS[name](rows, analysis) + "\n"
    return marked_blocks.rebuild(text, TAG, render)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    args = p.parse_args(argv)
    rows, analysis = load()
    stale = []
    for path in DOCS:
        with open(path) as f:
            text = f.read()
        new = rebuild(text, rows, analysis)
        if new != text:
            stale.append(os.path.relpath(path, ROOT))
            if not args.check:
                files.atomic_write_text(path, new)
    if args.check and stale:
        sys.exit(f"{', '.join(stale)} out of date: run python -m experiments.reporting.build_docs")
    print(f"{', '.join(stale) or 'README.md, docs/study.md'}: "
          f"{'rebuilt' if stale else 'up to date'}")


if __name__ == "__main__":
    main()
