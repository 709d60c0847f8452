#!/usr/bin/env bash
# Set up (idempotent) and run the test suite. Default: the fast tests (what CI runs).
#   scripts/test.sh            fast tests
#   scripts/test.sh --slow     the slow tests too
#   scripts/test.sh -- ARGS    extra pytest arguments (e.g. -- -k metrics)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
VENV="${SNGAN_VENV:-$ROOT/.venv}"
marks=(-m "not slow")
if [ "${1:-}" = "--slow" ]; then marks=(-m "slow or not slow"); shift; fi
[ "${1:-}" = "--" ] && shift
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONHASHSEED=0
set +e
"$VENV/bin/python" -m pytest "${marks[@]}" "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
