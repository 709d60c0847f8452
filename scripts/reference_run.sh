#!/usr/bin/env bash
# The committed reference run in results/fashion_mnist/ (v2): the default study at a budget
# chosen to let the curves flatten and to separate signal from noise: 1,000 generator steps per
# point with the learning rate decayed linearly to 0 over the second half, 3 seeds at every
# batch size from 8 to 512, 5 evaluations per curve, the final checkpoint scored with 3
# evaluation seeds. Planned as about 5 hours of a 2-core CPU, in several sittings: re-running
# skips finished points and resumes the others from their last checkpoint.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec scripts/sweep_batch_sizes.sh --batch-sizes 8,16,32,64,128,256,512 --steps 1000 \
    --seeds 0,1,2 --set eval.every=200 --set train.lr_decay_start=500 \
    --out results/fashion_mnist "$@"
