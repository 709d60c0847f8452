"""Renders benchmarks/results/*.json into docs/benchmarks.md.

    python -m benchmarks.build_docs [--check]

docs/benchmarks.md is hand-written prose with one generated block per result file, between
`<!-- benchmark: NAME -->` and `<!-- /benchmark: NAME -->`; only those blocks are replaced.
Each block states where its numbers come from (measured by the command shown, or carried
from an earlier quiet measurement), the machine, its measured peak and the date. --check
exits 1 if the file is not what the results render to.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys

from common import files, marked_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
BLOCK = marked_blocks.pattern("benchmark")


def render_tables(tables: list[dict]) -> str:
    parts = []
    for t in tables:
        lines = []
        if t.get("title"):
            lines += [f"*{t['title']}*", ""]
        lines.append("| " + " | ".join(t["columns"]) + " |")
        lines.append("|" + "---|" * len(t["columns"]))
        lines += ["| " + " | ".join(row) + " |" for row in t["rows"]]
        if t.get("notes"):
            lines += ["", t["notes"]]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def provenance(result: dict) -> str:
    """One paragraph: where the numbers come from, on what machine, against which peak."""
    m, peak = result["machine"], result.get("peak")
    cores = f"{m['cores_used']} cores" if m.get("cores_used") else ""
    ext = "/".join(x.upper() for x in m.get("vector_extensions", []))
    hardware = ", ".join(x for x in (m["cpu"], cores, ext) if x)
    peak_text = ""
    if peak:
        peak_text = (f"; conv peak {peak['gflops_wall']:.0f} GFLOP/s by the wall clock, "
                     f"{peak['gflops_cpu']:.0f} by CPU time ({peak['source']})")
    if result["provenance"] == "measured":
        source = f"**Measured** {result['date']} by `{result['command']}`"
    else:
        source = (f"**Carried** from the last quiet measurement ({result['provenance']}), "
                  f"by `{result['command']}`")
    load = ""
    if m.get("load_average_at_start") is not None:
        load = (f"; load average {m['load_average_at_start']:.1f} at the start, "
                f"{m.get('load_average_at_end', float('nan')):.1f} at the end")
    software = f", TensorFlow {m['tensorflow']}" if m.get("tensorflow") else ""
    return f"{source}, on {hardware}{software}{peak_text}{load}."


def render_block(result: dict) -> str:
    return provenance(result) + "\n\n" + render_tables(result["tables"]) + "\n"


def load_results(directory: str = RESULTS) -> dict[str, dict]:
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            result = json.load(f)
        out[result["benchmark"]] = result
    return out


def rebuild(text: str, results: dict[str, dict]) -> str:
    """`text` with every block whose result exists re-rendered; unknown blocks refused."""
    def render(name: str) -> str:
        if name not in results:
            raise SystemExit(f"docs block '{name}' has no benchmarks/results/{name}.json")
        return render_block(results[name])
    return marked_blocks.rebuild(text, "benchmark", render)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true",
                   help="exit 1 if docs/benchmarks.md is out of date, change nothing")
    args = p.parse_args(argv)
    with open(DOC) as f:
        text = f.read()
    new = rebuild(text, load_results())
    if args.check:
        if new != text:
            sys.exit("docs/benchmarks.md is out of date: run python -m benchmarks.build_docs")
        return
    if new != text:
        files.atomic_write_text(DOC, new)
    print(f"{os.path.relpath(DOC, ROOT)}: {'rebuilt' if new != text else 'up to date'}")


if __name__ == "__main__":
    main()
