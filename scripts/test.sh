#!/usr/bin/env bash
# Set up (idempotent), lint with ruff, and run the tests. CI (.ci/run) runs the first two:
#   scripts/test.sh            the fast tests: every test not marked slow or long (as `pytest`)
#   scripts/test.sh --slow     the tests marked slow (real Fashion-MNIST training, sweeps killed
#                              and resumed in subprocesses, a real-SLURM job preempted once)
#   scripts/test.sh --long     the tests marked long: minutes each on a 2-core machine, kept out
#                              of CI so that it stays well under 30 min there (the other ways
#                              SLURM preempts, sweeps killed at 10 random moments, shipped
#                              networks retrained byte for byte, ...). Run them when you touch
#                              what they cover, and before a release.
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
marks=(-m "not slow and not long")
case "${1:-}" in
  --fast) shift ;;
  --slow) marks=(-m "slow"); shift ;;
  --long) marks=(-m "long"); shift ;;
  --all) marks=(-m "slow or long or not (slow or long)"); shift ;;
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
