#!/usr/bin/env bash
# Set up (idempotent), lint with ruff, and run the tests. CI (.ci/run) runs both selections:
#   scripts/test.sh            the fast tests: every test not marked slow (as plain `pytest`)
#   scripts/test.sh --slow     only the tests marked slow (real Fashion-MNIST training, sweeps
#                              killed and resumed in subprocesses, full-size evaluations)
#   scripts/test.sh --all      every test
#   scripts/test.sh --fast     the same as no option
#   scripts/test.sh [OPTION] -- ARGS   extra pytest arguments (e.g. --all -- -k metrics;
#                              -- -n 0 runs in this one process, for -x or a debugger)
# Two pytest-xdist workers share the tests, each test file on one worker (module fixtures are
# built once): tracing TensorFlow graphs, most of a test's time, keeps one core busy.
# Exits non-zero when pytest selects no test at all (its exit status 5).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
marks=(-m "not slow")
case "${1:-}" in
  --fast) shift ;;
  --slow) marks=(-m "slow"); shift ;;
  --all) marks=(-m "slow or not slow"); shift ;;
esac
[ "${1:-}" = "--" ] && shift
bash scripts/setup.sh
VENV="${SNGAN_VENV:-$ROOT/.venv}"
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONHASHSEED=0
echo "ruff: lint (settings in pyproject.toml)"
"$VENV/bin/ruff" check .
set +e
"$VENV/bin/python" -m pytest "${marks[@]}" -n 2 --dist loadfile "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
