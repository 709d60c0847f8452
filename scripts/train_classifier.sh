#!/usr/bin/env bash
# Retrain a shipped Fashion-MNIST classifier (experiments/assets/): the default CNN, or the
# second extractor with `--classifier fashion_mnist_resnet`.
# The result is byte-identical to the committed weights on the same machine and software versions.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
exec "${SNGAN_VENV:-$ROOT/.venv}/bin/python" -m experiments train-classifier "$@"
