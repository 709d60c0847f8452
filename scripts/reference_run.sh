#!/usr/bin/env bash
# The committed reference run in results/fashion_mnist/: the default study at a larger budget
# (300 generator steps instead of 200, two seeds instead of one, four evaluations per run).
# About 50 minutes on this project's 2-core CPU machine. Re-running skips finished points.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec scripts/sweep_batch_sizes.sh --steps 300 --seeds 0,1 --set eval.every=75 \
    --out results/fashion_mnist "$@"
