"""The study notebook runs headlessly against a small results directory."""
import pathlib

import nbformat
from fake_results import fake_sweep
from nbclient import NotebookClient

NOTEBOOK = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "batch_size_study.ipynb"


def test_notebook_executes_on_a_results_directory(tmp_path, monkeypatch):
    fake_sweep(str(tmp_path))  # no report yet: the notebook must build it
    monkeypatch.setenv("SWEEP_DIR", str(tmp_path))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/markdown", ""))
                   for o in outputs)
    assert "| 512 |" in text  # the table was shown
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 5  # vs-batch plot, two curves, comparison, class grids
    assert (tmp_path / "report" / "table.md").exists()
