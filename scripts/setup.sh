#!/usr/bin/env bash
# Idempotent set-up shared by every entry point: a virtual environment with the suite and its
# packages, and the embedded Fashion-MNIST data. A second run reuses what is there.
# Source it (`. scripts/setup.sh`) or run it; afterwards .venv/bin/python is ready.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SNGAN_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
FASHION_DIR="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"

log() { echo "[setup] $*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

# Reinstall only when the declared dependencies change.
stamp="$VENV/.sngan-installed"
want="$(cat "$ROOT/setup.cfg" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing the suite and its packages into $VENV (first time: a few minutes)"
  "$VENV/bin/python" -m pip install -q -e "$ROOT[test]"
  echo "$want" > "$stamp"
else
  log "packages up to date"
fi

if [ ! -f "$FASHION_DIR/train-images-idx3-ubyte.gz" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    log "installing Debian package dataset-fashion-mnist"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null
  else
    log "Fashion-MNIST not found in $FASHION_DIR."
    log "Install it with: sudo apt-get install dataset-fashion-mnist"
    log "or point FASHION_MNIST_DIR at a folder holding the four *-ubyte.gz IDX files."
    exit 1
  fi
fi
log "Fashion-MNIST: $FASHION_DIR"
