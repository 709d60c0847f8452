"""Inception Score, FID and KID from classifier activations, by TF-GAN's functions in float64.

Scores are what users cite, so the arithmetic is TF-GAN's (through `common.tfgan_bridge`), not
ours: this module only splits, casts and orders the activations. Activations themselves are
produced batch by batch by a classifier (`experiments.evaluation.classifiers`), so memory stays
bounded by the activations (50k x 2048 float64 = 0.8 GB for Inception), never by the images.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from common import tfgan_bridge
from experiments.evaluation.kid_blocks import kid_block_size, kid_blocks_fit

# TF-GAN's metric functions run op by op in eager mode; traced (same ops, same float64) they
# run several times faster. A sweep's sample counts are
# fixed, so KID is traced once (it needs static shapes); per-class FIDs see a new sample count
# per class, so FID is traced with unknown sample counts after a few (reduce_retracing).
_frechet = tf.function(tfgan_bridge.eval.frechet_classifier_distance_from_activations,
                       reduce_retracing=True)
_kernel = tf.function(tfgan_bridge.eval.kernel_classifier_distance_and_std_from_activations)


def _matrix(x, name: str) -> tf.Tensor:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty [N, D] matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or inf")
    return tf.constant(x)


def split_bounds(n: int, splits: int) -> list[tuple[int, int]]:
    """Consecutive [start, end) parts as in the original IS code (improved-gan)."""
    if not 1 <= splits <= n:
        raise ValueError(f"cannot split {n} samples into {splits} IS splits")
    return [(i * n // splits, (i + 1) * n // splits) for i in range(splits)]


def inception_score(logits, splits: int = 10) -> tuple[float, float]:
    """Mean and (population) std of exp(E KL(p(y|x) || p(y))) over `splits` parts.

    Each part's score is TF-GAN's `classifier_score_from_logits` in float64; mean +- std over
    parts is the protocol of Salimans et al. (2016) that papers report.
    """
    logits = _matrix(logits, "logits")
    scores = [float(tfgan_bridge.eval.classifier_score_from_logits(logits[a:b]))
              for a, b in split_bounds(int(logits.shape[0]), splits)]
    return float(np.mean(scores)), float(np.std(scores))


def frechet_distance(features_a, features_b) -> float:
    """FID between Gaussians fitted to two feature sets (unbiased covariances, SVD sqrt)."""
    a, b = _matrix(features_a, "features_a"), _matrix(features_b, "features_b")
    _check_same_dim(a, b)
    if a.shape[0] < 2 or b.shape[0] < 2:
        raise ValueError("FID needs at least 2 samples per set")
    return float(_frechet(a, b))


def kernel_distance(features_a, features_b, subsets: int = 10,
                    seed: int | None = 0) -> tuple[float, float]:
    """KID (cubic polynomial kernel MMD^2, unbiased) and its standard error over `subsets` blocks.

    TF-GAN's block estimator assumes both sets are in random order; generated samples are
    often ordered by class, so both are permuted with a fixed `seed` first (None: as given).
    Blocks hold ceil(max(n_a, n_b) / subsets) samples of the larger set. The second value is
    TF-GAN's standard-error estimate (std over blocks / sqrt(number of blocks)); NaN for 1 block.
    """
    a, b = _matrix(features_a, "features_a"), _matrix(features_b, "features_b")
    _check_same_dim(a, b)
    n_a, n_b = int(a.shape[0]), int(b.shape[0])
    if not kid_blocks_fit(n_a, n_b, subsets):
        raise ValueError(f"KID with {subsets} subsets needs >= 2 samples of each set per "
                         f"block; got {n_a} and {n_b}")
    if seed is not None:
        rng = np.random.default_rng(seed)
        a = tf.gather(a, rng.permutation(int(a.shape[0])))
        b = tf.gather(b, rng.permutation(int(b.shape[0])))
    mean, stderr = _kernel(a, b, max_block_size=kid_block_size(n_a, n_b, subsets))
    return float(mean), float(stderr)


def _check_same_dim(a: tf.Tensor, b: tf.Tensor) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"feature dimensions differ: {a.shape[1]} vs {b.shape[1]}")
