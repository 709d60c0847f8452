"""Recognisability of class-conditional samples, and fidelity/diversity on classifier features.

IS and FID say little about whether a class-conditional generator draws the class it was asked
for, which is the paper's 'orange' claim. So every score also records:
- conditional accuracy: the scoring classifier's top-1 on generated samples against the labels
  they were conditioned on (overall and per class);
- intra-FID: FID computed per class and averaged (Miyato & Koyama 2018, the projection paper);
- improved precision/recall (Kynkaenniemi et al. 2019) and density/coverage (Naeem et al.
  2020) on the same features, k-NN estimates of fidelity and diversity.
TF-GAN provides none of these except the Frechet distance, which intra-FID uses.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import tensorflow as tf

from experiments.evaluation import metrics

MIN_PER_CLASS = 2  # a covariance needs 2 samples; FID from few samples is biased upwards


def conditional_accuracy(logits, labels, num_classes: int) -> dict:
    """{'accuracy': float, 'per_class_accuracy': [float] (NaN for classes not sampled)}."""
    logits, labels = np.asarray(logits), np.asarray(labels).astype(np.int64)
    if logits.ndim != 2 or len(logits) != len(labels) or len(labels) == 0:
        raise ValueError(f"need [N, C] logits and N labels, got {logits.shape} and "
                         f"{labels.shape}")
    if labels.min() < 0 or labels.max() >= num_classes:
        raise ValueError(f"labels must lie in [0, {num_classes})")
    correct = np.argmax(logits, axis=1) == labels
    counts = np.bincount(labels, minlength=num_classes)
    hits = np.bincount(labels, weights=correct, minlength=num_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = np.where(counts > 0, hits / np.maximum(counts, 1), np.nan)
    return dict(accuracy=float(correct.mean()), per_class_accuracy=per_class.tolist())


def intra_fid(features, labels, real_features, real_labels, num_classes: int,
              min_per_class: int = MIN_PER_CLASS) -> dict:
    """{'intra_fid': mean of per-class FIDs, 'per_class_fid': [float]} (TF-GAN's FID)."""
    features, labels = np.asarray(features), np.asarray(labels)
    real_features, real_labels = np.asarray(real_features), np.asarray(real_labels)
    pairs = []
    for c in range(num_classes):
        fake_c, real_c = features[labels == c], real_features[real_labels == c]
        if min(len(fake_c), len(real_c)) < min_per_class:
            raise ValueError(
                f"intra-FID needs >= {min_per_class} generated and real samples of every class; "
                f"class {c} has {len(fake_c)} generated and {len(real_c)} real: raise "
                "eval.num_fake/eval.num_real (with eval.protocol=custom)")
        pairs.append((real_c, fake_c))
    # The classes are independent and each FID's matrix square roots run on one core: one
    # thread per core computes them side by side (same values).
    with ThreadPoolExecutor(max(1, min(len(pairs), os.cpu_count() or 1))) as pool:
        per_class = list(pool.map(lambda pair: metrics.frechet_distance(*pair), pairs))
    return dict(intra_fid=float(np.mean(per_class)), per_class_fid=per_class)


# Distances per block, whatever the set sizes: 4M floats (16 MB). Larger blocks made the ball
# counts slower and the k-NN radii no faster.
_BLOCK_ELEMENTS = 1 << 22
# k-NN distances in float32 on features centred at the real mean, as the reference codes of
# both papers compute them (their features are float32 network outputs, and so are ours):
# several times faster than float64, and over the `fast` protocol's 50M (fake, real) pairs
# the two differ by a pair or two (5e-5 of density or coverage, 100x below the evaluation
# noise). Records say so (Protocol.knn_dtype).
DISTANCE_DTYPE = np.float32


def _rows_per_block(columns: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(columns, 1))


def _sq_dists(a, b, b_sq):
    """Squared Euclidean distances of a block of rows `a` to all of `b`."""
    d = (tf.reduce_sum(a * a, axis=1)[:, None] + b_sq[None, :]
         - 2.0 * tf.matmul(a, b, transpose_b=True))
    return tf.maximum(d, 0.0)


@tf.function(reduce_retracing=True)
def _kth_smallest(a, b, b_sq, k):
    return -tf.math.top_k(-_sq_dists(a, b, b_sq), k + 1).values[:, k]


def knn_radii(x: np.ndarray, k: int) -> np.ndarray:
    """Squared distance of every point of `x` to its k-th nearest other point of `x`.

    Block by block in TensorFlow (traced, on every core): half the time of numpy here. In
    `x`'s precision: float32 stays float32 (see DISTANCE_DTYPE), anything else is float64."""
    if len(x) <= k:
        raise ValueError(f"k-NN with k={k} needs more than {k} samples, got {len(x)}")
    x = np.asarray(x)
    x = tf.constant(x, tf.float32 if x.dtype == np.float32 else tf.float64)
    x_sq = tf.reduce_sum(x * x, axis=1)
    rows = _rows_per_block(int(x.shape[0]))
    # the point itself is at distance 0: the k-th neighbour is the (k+1)-th smallest
    return np.concatenate([_kth_smallest(x[i:i + rows], x, x_sq, k).numpy()
                           for i in range(0, int(x.shape[0]), rows)])


@tf.function(reduce_retracing=True, jit_compile=True)  # XLA fuses the passes: -25%
def _ball_counts(fake, fake_radii, real, real_sq, radii_pr, radii_dc):
    """For a block of fakes: which lie in a real k-NN ball (closed), which reals lie in one of
    their balls, how many (fake, real) pairs lie in an open real ball, which reals have one."""
    d = _sq_dists(fake, real, real_sq)
    in_dc = d < radii_dc[None, :]  # open balls, as Naeem et al.'s code
    return (tf.reduce_any(d <= radii_pr[None, :], axis=1),
            tf.reduce_any(d <= fake_radii[:, None], axis=0),
            tf.math.count_nonzero(in_dc), tf.reduce_any(in_dc, axis=0))


def _features(x, name: str) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise ValueError(f"{name} must be an [N, D] matrix, got shape {x.shape}")
    return x


class RealManifold:
    """Real features with their k-NN radii, computed once per sweep (the costly part)."""

    def __init__(self, real_features, k_pr: int = 3, k_dc: int = 5):
        real = _features(real_features, "real_features")
        self.center = real.mean(axis=0)  # centring keeps float32's a^2 + b^2 - 2ab accurate
        self.features = self._centred(real)
        self.k_pr, self.k_dc = k_pr, k_dc
        self.radii_pr = knn_radii(self.features, k_pr)
        self.radii_dc = self.radii_pr if k_dc == k_pr else knn_radii(self.features, k_dc)

    def _centred(self, x: np.ndarray) -> np.ndarray:
        return (x - self.center).astype(DISTANCE_DTYPE)

    def fidelity_diversity(self, fake_features) -> dict:
        """Improved precision/recall (Kynkaenniemi et al. 2019, closed k-NN balls: share of fakes
        inside the real manifold, of reals inside the fake one) and density/coverage (Naeem et
        al. 2020, open balls: real balls holding each fake / k, ~1 when the distributions
        match; share of real balls holding at least one fake), from one pass over the
        fake-real distances."""
        fake = self._centred(_features(fake_features, "fake_features"))
        fake_radii = knn_radii(fake, self.k_pr)
        real = tf.constant(self.features)
        args = (real, tf.reduce_sum(real * real, axis=1), tf.constant(self.radii_pr),
                tf.constant(self.radii_dc))
        in_real = []
        in_fake = np.zeros(len(self.features), bool)
        covered = np.zeros(len(self.features), bool)
        density = 0
        rows = _rows_per_block(len(self.features))
        for i in range(0, len(fake), rows):
            block_in_real, block_in_fake, block_density, block_covered = _ball_counts(
                tf.constant(fake[i:i + rows]), tf.constant(fake_radii[i:i + rows]), *args)
            in_real.append(block_in_real.numpy())
            in_fake |= block_in_fake.numpy()
            density += int(block_density)
            covered |= block_covered.numpy()
        in_real = np.concatenate(in_real)
        return dict(precision=float(in_real.mean()), recall=float(in_fake.mean()),
                    density=float(density / (self.k_dc * len(fake))),
                    coverage=float(covered.mean()))


def precision_recall(real_features, fake_features, k: int = 3) -> dict:
    out = RealManifold(real_features, k, k).fidelity_diversity(fake_features)
    return dict(precision=out["precision"], recall=out["recall"])


def density_coverage(real_features, fake_features, k: int = 5) -> dict:
    out = RealManifold(real_features, k, k).fidelity_diversity(fake_features)
    return dict(density=out["density"], coverage=out["coverage"])
