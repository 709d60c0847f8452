#!/usr/bin/env bash
# Set up (idempotent) and run the test suite: what CI runs. About 5 minutes on 2 CPU cores.
#   scripts/test.sh            every test, the slow ones (~1 min: real Fashion-MNIST training
#                              and the full test split through the classifier) included
#   scripts/test.sh --fast     only the fast tests (as plain `pytest` does)
#   scripts/test.sh -- ARGS    extra pytest arguments (e.g. -- -k metrics)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
VENV="${SNGAN_VENV:-$ROOT/.venv}"
marks=(-m "slow or not slow")
if [ "${1:-}" = "--fast" ]; then marks=(-m "not slow"); shift; fi
[ "${1:-}" = "--" ] && shift
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONHASHSEED=0
echo "ruff: lint (settings in pyproject.toml)"
"$VENV/bin/ruff" check .
set +e
"$VENV/bin/python" -m pytest "${marks[@]}" "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
