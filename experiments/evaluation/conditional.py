"""Recognisability of class-conditional samples.

IS and FID say little about whether a class-conditional generator draws the class it was asked
for, which is the paper's 'orange' claim. So every score also records:
- conditional accuracy: the scoring classifier's top-1 on generated samples against the labels
  they were conditioned on (overall and per class);
- intra-FID: FID computed per class and averaged (Miyato & Koyama 2018, the projection paper),
  by TF-GAN's Frechet distance.
Fidelity and diversity on the same features: experiments/evaluation/fidelity_diversity.py.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

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
