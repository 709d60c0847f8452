#!/usr/bin/env bash
# Refresh requirements/lock.txt, the exact versions and hashes scripts/setup.sh installs:
#   scripts/lock.sh            keep every locked version; add or drop only what a change to
#                              setup.cfg requires
#   scripts/lock.sh --upgrade  move every package to its newest release within setup.cfg's ranges
# One resolution (uv's universal mode) for Python >= 3.11 on every platform, with every file's
# hash; installed and tested on Linux x86-64 only. Needs PyPI; takes `uv` from PATH, or installs
# it into a throwaway virtual environment.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
upgrade=()
case "${1:-}" in
  "") ;;
  --upgrade) upgrade=(--upgrade) ;;
  *) echo "usage: scripts/lock.sh [--upgrade]" >&2; exit 2 ;;
esac
UV="$(command -v uv || true)"
if [ -z "$UV" ]; then
  tools="$(mktemp -d)"
  trap 'rm -rf "$tools"' EXIT
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q uv
  UV="$tools/bin/uv"
fi
UV_PYTHON_DOWNLOADS=never "$UV" pip compile setup.cfg --extra test --universal \
  --python-version 3.11 --generate-hashes --custom-compile-command "scripts/lock.sh" \
  "${upgrade[@]}" -o requirements/lock.txt
