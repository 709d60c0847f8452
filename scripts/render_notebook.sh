#!/usr/bin/env bash
# Execute notebooks/batch_size_study.ipynb in place against the committed reference run, so the
# committed notebook shows its outputs on a code host (tests check they match results/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${SNGAN_VENV:-$ROOT/.venv}/bin/python"
TF_CPP_MIN_LOG_LEVEL=2 "$PY" - <<'PY'
import nbformat
from nbclient import NotebookClient

path = "notebooks/batch_size_study.ipynb"
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=600, kernel_name="python3",
               resources={"metadata": {"path": "notebooks"}}).execute()
for cell in nb.cells:  # outputs only: no execution counts or timings to churn in diffs
    cell.pop("execution_count", None) if cell.cell_type != "code" else None
    if cell.cell_type == "code":
        cell.execution_count = None
        cell.metadata.pop("execution", None)
nbformat.write(nb, path)
print(f"executed {path}")
PY
