#!/usr/bin/env bash
# The batch-size study (TF-Replicator's SN-GAN sweep). Sets up on first use, then runs
#   python -m experiments sweep [options]
# With no options: the embedded default (Fashion-MNIST, class-conditional SN-GAN at 32x32,
# global batch 8, 16, 32, 64, 512, shipped classifier), sized for a 2-core CPU; results in
# runs/batch_size_sweep/report/. Re-running skips finished points and resumes the rest.
# All options: scripts/sweep_batch_sizes.sh --help
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
exec "${SNGAN_VENV:-$ROOT/.venv}/bin/python" -m experiments sweep "$@"
