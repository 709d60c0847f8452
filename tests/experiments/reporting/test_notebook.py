"""The study notebook runs headlessly: on a fresh results directory it builds the report, and
on the committed reference run what it shows and prints is the committed results."""
import ast
import json
import pathlib
import re

import nbformat
import pytest
from fake_results import fake_sweep
from nbclient import NotebookClient

from common import files
from experiments import records

ROOT = pathlib.Path(__file__).resolve().parents[3]
NOTEBOOK = ROOT / "notebooks" / "batch_size_study.ipynb"
RESULTS = ROOT / "results" / "fashion_mnist"


def execute_copy(tmp_path) -> nbformat.NotebookNode:
    """Runs a copy of the notebook (the committed file is left alone) from notebooks/, so it
    finds the repository as it does when opened there; returns the executed copy."""
    copy = tmp_path / NOTEBOOK.name
    files.atomic_write_text(copy, NOTEBOOK.read_text())
    nb = nbformat.read(copy, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    nbformat.write(nb, copy)
    return nb


def _outputs(nb):
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def _printed(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


@pytest.mark.slow  # a kernel, the report and TensorFlow sampling: tens of seconds
def test_notebook_executes_on_a_results_directory(tmp_path, monkeypatch):
    fake_sweep(str(tmp_path))  # no report yet: the notebook must build it
    monkeypatch.setenv("SWEEP_DIR", str(tmp_path))
    outputs = _outputs(execute_copy(tmp_path))
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/markdown", ""))
                   for o in outputs)
    assert "| 512 |" in text and "## Signal and noise" in text  # table and verdicts shown
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # vs-batch plot, two curves, comparison
    assert (tmp_path / "report" / "report.md").exists()


@pytest.mark.long  # samples from the seven committed generators
def test_on_the_committed_run_it_shows_the_committed_numbers(tmp_path, monkeypatch):
    monkeypatch.delenv("SWEEP_DIR", raising=False)
    report = RESULTS / "report"
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    outputs = _outputs(execute_copy(tmp_path))
    assert not [o for o in outputs if o.output_type == "error"]
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before  # read, not rebuilt

    printed = _printed(outputs)
    assert "results directory: results/fashion_mnist" in printed
    tables = [o["data"]["text/markdown"] for o in outputs
              if "text/markdown" in o.get("data", {})]
    assert tables == [(report / "report.md").read_text()]

    # the raw-records cell: one printed row per batch, every number the summary's own
    summary = json.loads((report / "summary.json").read_text())
    rows = [ast.literal_eval(line) for line in printed.splitlines()
            if line.startswith("{'batch'")]
    keys = ("batch", "seeds", "is_mean", "fid", "acc", "images_seen")
    assert rows == [{k: entry[k] for k in keys} for entry in summary]
    assert [r["batch"] for r in rows] == [8, 16, 32, 64, 128, 256, 512]

    # live samples: each batch's first finished seed, named with its weights' checksum
    first_seed = {}
    for point in records.load_points(str(RESULTS)):
        if point.record.status == "done":
            first_seed.setdefault(point.record.global_batch_size, point.record)
    shown = re.findall(r"batch (\d+), seed (\d+): samples/generator.npz sha256 (\w+)", printed)
    assert shown == [(str(b), str(r.seed), r.generator_sha256[:16])
                     for b, r in sorted(first_seed.items())]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    figures = 5 if (report / "equal_images.png").exists() else 4
    # vs batch, two curves, the equal-images control when the run has one, comparison, grids
    assert len(images) == figures + len(first_seed)

