"""docs/benchmarks.md is rendered from benchmarks/results/*.json: the committed page is what
the committed results render to, and a block says where its numbers come from."""
import json
import pathlib

import pytest

from benchmarks import build_docs

ROOT = pathlib.Path(__file__).resolve().parents[2]

MEASURED = {
    "benchmark": "step", "provenance": "measured", "date": "2026-12-04",
    "command": "python -m benchmarks.step --repeats 5",
    "machine": {"cpu": "Some CPU", "cores_used": 2, "vector_extensions": ["avx2", "fma"],
                "tensorflow": "2.99", "load_average_at_start": 1.04,
                "load_average_at_end": 1.96},
    "peak": {"gflops_wall": 439.4, "gflops_cpu": 447.0, "source": "measured in the same run"},
    "tables": [{"title": "Rates", "columns": ["preset", "ms/step"],
                "rows": [["fashion_mnist", "155.0"], ["cifar10", "2180.0"]],
                "notes": "Medians of 5."}],
    "data": {}}


def test_the_committed_page_is_what_the_committed_results_render_to():
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    results = build_docs.load_results()
    assert {"peak", "step", "evaluation", "sweep", "replicator", "metrics"} <= set(results)
    assert build_docs.rebuild(text, results) == text
    for name in ("peak", "step", "evaluation", "sweep", "replicator", "metrics"):
        assert f"<!-- benchmark: {name} -->" in text


def test_a_measured_block_names_its_command_machine_peak_and_load():
    block = build_docs.render_block(MEASURED)
    first, rest = block.split("\n\n", 1)
    assert first == ("**Measured** 2026-12-04 by `python -m benchmarks.step --repeats 5`, on "
                     "Some CPU, 2 cores, AVX2/FMA, TensorFlow 2.99; conv peak 439 GFLOP/s by "
                     "the wall clock, 447 by CPU time (measured in the same run); load average "
                     "1.0 at the start, 2.0 at the end.")
    assert rest == ("*Rates*\n\n| preset | ms/step |\n|---|---|\n| fashion_mnist | 155.0 |\n"
                    "| cifar10 | 2180.0 |\n\nMedians of 5.\n")


def test_a_carried_block_says_so():
    carried = dict(MEASURED, provenance="an earlier quiet run", peak=None)
    first = build_docs.render_block(carried).split("\n\n", 1)[0]
    assert first.startswith("**Carried** from the last quiet measurement (an earlier quiet "
                            "run), by `python -m benchmarks.step --repeats 5`, on Some CPU")
    assert "peak" not in first


def test_only_marked_blocks_change_and_a_block_without_results_is_refused(tmp_path):
    (tmp_path / "step.json").write_text(json.dumps(MEASURED))
    results = build_docs.load_results(str(tmp_path))
    text = "# Title\n\nprose\n\n<!-- benchmark: step -->\nold\n<!-- /benchmark: step -->\nend\n"
    new = build_docs.rebuild(text, results)
    assert new.startswith("# Title\n\nprose\n\n<!-- benchmark: step -->\n**Measured**")
    assert new.endswith("| cifar10 | 2180.0 |\n\nMedians of 5.\n<!-- /benchmark: step -->\nend\n")
    assert build_docs.rebuild(new, results) == new  # idempotent
    with pytest.raises(SystemExit, match="'peak' has no benchmarks/results/peak.json"):
        build_docs.rebuild("<!-- benchmark: peak -->\n<!-- /benchmark: peak -->", results)
