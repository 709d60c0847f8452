"""How KID's block estimator splits the samples (TF-GAN's `max_block_size`), without
TensorFlow: the metric uses it to score, and the config to refuse a protocol it cannot score."""
from __future__ import annotations


def kid_block_size(num_a: int, num_b: int, subsets: int) -> int:
    """Samples per block of KID's block estimator (experiments.evaluation.metrics
    .kernel_distance, TF-GAN's max_block_size): ceil(max(n_a, n_b) / subsets)."""
    return -(-max(num_a, num_b) // subsets)


def kid_blocks_fit(num_a: int, num_b: int, subsets: int) -> bool:
    """Whether KID's block estimator can use `subsets` blocks: each block needs >= 2 samples
    of each set (its unbiased MMD divides by m(m-1)). Checked by the config and the metric."""
    blocks = -(-max(num_a, num_b) // kid_block_size(num_a, num_b, subsets))
    return min(num_a, num_b) >= 2 * blocks


def max_kid_subsets(num_a: int, num_b: int) -> int:
    """The most blocks KID can split `num_a` and `num_b` samples into (0: none fits)."""
    return max((s for s in range(1, min(num_a, num_b) // 2 + 1)
                if kid_blocks_fit(num_a, num_b, s)), default=0)
