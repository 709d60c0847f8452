"""The study notebook runs headlessly, and its committed outputs come from the committed
results (so a reader on a code host sees the reference run as it is)."""
import base64
import pathlib

import nbformat
import pytest
from fake_results import fake_sweep
from nbclient import NotebookClient

from experiments import records

ROOT = pathlib.Path(__file__).resolve().parents[3]
NOTEBOOK = ROOT / "notebooks" / "batch_size_study.ipynb"
RESULTS = ROOT / "results" / "fashion_mnist"


def _outputs(nb):
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def test_notebook_executes_on_a_results_directory(tmp_path, monkeypatch):
    fake_sweep(str(tmp_path))  # no report yet: the notebook must build it
    monkeypatch.setenv("SWEEP_DIR", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/markdown", ""))
                   for o in outputs)
    assert "| 512 |" in text and "## Signal and noise" in text  # table and verdicts shown
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # vs-batch plot, two curves, comparison
    assert (tmp_path / "report" / "table.md").exists()


def test_committed_outputs_come_from_the_committed_results():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    outputs = _outputs(nb)
    if not (RESULTS / "report" / "table.md").exists():
        pytest.skip("no committed reference run yet")
    assert outputs, "the notebook is committed without outputs: run scripts/render_notebook.sh"
    assert not [o for o in outputs if o.output_type == "error"]
    tables = [o["data"]["text/markdown"] for o in outputs
              if "text/markdown" in o.get("data", {})]
    assert tables == [(RESULTS / "report" / "table.md").read_text()]
    pngs = {o["data"]["image/png"].replace("\n", "") for o in outputs
            if "image/png" in o.get("data", {})}
    for name in ("is_fid_vs_batch", "comparison"):
        data = base64.b64encode((RESULTS / "report" / f"{name}.png").read_bytes()).decode()
        assert data in pngs, f"{name}.png differs from the notebook's output"
    printed = "".join(o.get("text", "") for o in outputs)
    assert "results directory: results/fashion_mnist" in printed
    first_seed = {}
    for point in records.load_points(str(RESULTS)):
        if point.record.status == "done":
            first_seed.setdefault(point.record.global_batch_size, point.record)
    for batch, record in first_seed.items():
        assert (f"batch {batch}, seed {record.seed}: samples/generator.npz sha256 "
                f"{record.generator_sha256[:16]}") in printed
