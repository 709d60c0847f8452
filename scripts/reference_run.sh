#!/usr/bin/env bash
# The committed reference run, results/fashion_mnist/: experiments/configs/fashion_mnist_reference.py
# (its first sweep, v2; --sweep more_seeds or --sweep equal_images add study v3's points).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec scripts/sweep_batch_sizes.sh --preset fashion_mnist_reference --out results/fashion_mnist "$@"
