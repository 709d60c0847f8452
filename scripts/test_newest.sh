#!/usr/bin/env bash
# The tests on the newest releases within setup.cfg's ranges instead of requirements/lock.txt:
# what an upgrade would break, in one command. Takes scripts/test.sh's options (none: the fast
# tests). Its own environment, .venv-newest (or $SNGAN_NEWEST_VENV), is upgraded on every run;
# .venv keeps the locked versions. tests/test_requirements_lock.py skips there, naming what
# differs from the lock.
# When it passes, `scripts/lock.sh --upgrade` moves the lock to these versions.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export SNGAN_VENV="${SNGAN_NEWEST_VENV:-$ROOT/.venv-newest}" SNGAN_UNPINNED=1
rm -f "$SNGAN_VENV/.sngan-installed"  # setup.sh upgrades every package again
exec bash scripts/test.sh "$@"
