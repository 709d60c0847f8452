#!/usr/bin/env bash
# Study v5, the lr searched per batch size, into results/fashion_mnist: one run at a time, the
# first grid (factors 0.5 and 2 around v4's factor 1 at batch 16-256; 2 and 4 around the
# probe's sqrt 8 at batch 512, plus the probe's seed 2), seeds 0-1, batch 512 last. Finished
# runs are skipped, an interrupted one resumes. Needs a CPU with AVX512_BF16 or AMX (the runs
# are bfloat16, as v4's); elsewhere the first run refuses with the reason.
#   scripts/study_v5.sh             run the grid
#   scripts/study_v5.sh --dry-run   list the runs without running them
# Afterwards `python -m experiments report results/fashion_mnist` shows, per batch size,
# whether the best factor is bracketed and the factor to run next where it is not
# (`--sweep lr_xF --batch-sizes B --seeds 0,1`); the third seed at each chosen factor is
# `--sweep lr_xF --batch-sizes B --seeds 2`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
run() {  # SWEEP BATCH SEEDS [extra options]
  .venv/bin/python -m experiments sweep --preset fashion_mnist_reference --sweep "$1" \
    --batch-sizes "$2" --seeds "$3" --no-calibration --no-report --out results/fashion_mnist \
    "${@:4}"
}
extra=("$@")
for batch in 16 32 64 128 256; do
  for arm in lr_x2 lr_x0p5; do run "$arm" "$batch" 0,1 "${extra[@]}"; done
done
run lr_probe 512 2 "${extra[@]}"
for arm in lr_x2 lr_x4; do run "$arm" 512 0,1 "${extra[@]}"; done
