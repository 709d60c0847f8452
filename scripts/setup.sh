#!/usr/bin/env bash
# Idempotent set-up shared by every entry point: a virtual environment with the suite and its
# packages, and the embedded Fashion-MNIST data. A second run reuses what is there.
# Run it (`bash scripts/setup.sh`); afterwards .venv/bin/python is ready. Do not source it.
#
# By default the packages are the exact versions and hashes of requirements/lock.txt (Python
# >= 3.11; the versions every committed number was made with), then the suite itself without
# dependencies. SNGAN_UNPINNED=1 installs the newest releases within setup.cfg's ranges instead
# (other platforms, Python 3.10, GPU users adding tensorflow[and-cuda]); it leaves the marker
# .sngan-unpinned in the environment, where tests/test_requirements_lock.py skips, not fails.
# Packages are reinstalled only when the lock, setup.cfg, pyproject.toml or the mode change.
if (return 0 2>/dev/null); then  # sourced: return before any shell option is set
  echo "[setup] run scripts/setup.sh with bash, do not source it (nothing was done)" >&2
  return 1
fi
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SNGAN_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
FASHION_DIR="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
LOCK="$ROOT/requirements/lock.txt"
UNPINNED="${SNGAN_UNPINNED:-0}"

log() { echo "[setup] $*" >&2; }

case "$UNPINNED" in
  0|1) ;;
  *) log "SNGAN_UNPINNED must be 0 or 1, not '$UNPINNED'"; exit 1 ;;
esac

if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

if [ "$UNPINNED" = 0 ] && ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'
then
  log "requirements/lock.txt needs Python >= 3.11 (TensorFlow 2.21 and Keras 3.15.1 do);"
  log "$VENV has $("$VENV/bin/python" -V). Use PYTHON=python3.11 with a new SNGAN_VENV,"
  log "or SNGAN_UNPINNED=1 for the newest releases this Python can install (not the locked ones)."
  exit 1
fi

# Reinstall only when the declared dependencies or the mode change.
stamp="$VENV/.sngan-installed"
want="$(cat "$ROOT/setup.cfg" "$ROOT/pyproject.toml" "$LOCK" | sha256sum | cut -d' ' -f1)"
want="$want unpinned=$UNPINNED"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  rm -f "$stamp"
  if [ "$UNPINNED" = 1 ]; then
    log "installing the suite and the newest packages within setup.cfg's ranges into $VENV"
    touch "$VENV/.sngan-unpinned"
    "$VENV/bin/python" -m pip install -q --upgrade --upgrade-strategy eager -e "$ROOT[test]"
  else
    log "installing the locked packages (requirements/lock.txt) and the suite into $VENV" \
        "(first time: a few minutes)"
    "$VENV/bin/python" -m pip install -q --require-hashes -r "$LOCK"
    # the build backend (setuptools, wheel) is in the lock: nothing unlocked is fetched
    "$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$ROOT"
    rm -f "$VENV/.sngan-unpinned"
  fi
  echo "$want" > "$stamp"
else
  log "packages up to date ($([ "$UNPINNED" = 1 ] && echo unpinned || echo locked))"
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
