"""What every scoring classifier shares: the interface and the bounded-memory batch loop.

A classifier maps images in [-1, 1] (NHWC) to logits (for the Inception Score) and pooled
features (for FID/KID). Images arrive either as one array or as an iterable of batches (a
generator sampling 50k images never holds them all), and are pushed through the network in
batches of at most `batch_size`, so memory is bounded by one batch of images plus the
(small) activations.
"""
from __future__ import annotations

import typing

import numpy as np
import tensorflow as tf


@typing.runtime_checkable
class Classifier(typing.Protocol):
    name: str  # "fashion_mnist_classifier" | "fashion_mnist_resnet" | "inception"
    version: str  # sha256 of the weights: scores are only comparable at equal versions
    resize_method: str  # how images reach the network's input size (recorded with scores)
    feature_layer: str  # which activations FID/KID use
    feature_dim: int
    num_classes: int
    # Which datasets' labels its logits name, and at which logit index label 0 sits: the
    # conditional accuracy needs both (Inception's 1008 logits put background at index 0).
    label_datasets: tuple[str, ...]
    label_offset: int

    def activations(self, images, batch_size: int = 500) -> tuple[np.ndarray, np.ndarray]:
        """(logits [N, K], features [N, F]), both float64."""


def iterate_batches(images, batch_size: int) -> typing.Iterator[np.ndarray | tf.Tensor]:
    """Batches of at most `batch_size` images from an array/tensor or an iterable of batches."""
    if batch_size <= 0:
        raise ValueError(f"batch_size must be > 0, got {batch_size}")
    if isinstance(images, (np.ndarray, tf.Tensor)):
        images = (images,)
    for chunk in images:
        if isinstance(chunk, tuple) and len(chunk) == 2:
            chunk = chunk[0]  # (images, labels) pairs from a dataset: keep the images
        if not isinstance(chunk, tf.Tensor):
            chunk = np.asarray(chunk, dtype=np.float32)
        for start in range(0, int(chunk.shape[0]), batch_size):
            yield chunk[start:start + batch_size]


def check_image_batch(batch, shape: tuple[int | None, int | None, int | None], who: str):
    """Fail loudly on the two silent ways to get wrong scores: wrong shape or range."""
    batch = tf.convert_to_tensor(batch, tf.float32)
    if batch.shape.rank != 4 or any(
            want is not None and got != want for want, got in zip(shape, batch.shape[1:])):
        raise ValueError(f"{who} expects images of shape [N, {', '.join(map(str, shape))}] "
                         f"(None = any), got {batch.shape}")
    lo, hi = float(tf.reduce_min(batch)), float(tf.reduce_max(batch))
    if lo < -1.001 or hi > 1.001:
        raise ValueError(f"{who} expects images in [-1, 1], got values in [{lo:.3g}, {hi:.3g}]")
    return batch


def run_in_batches(fn, images, batch_size: int, shape, who: str):
    """Concatenated (logits, features) of `fn` over all batches, as float64."""
    logits, features = [], []
    for batch in iterate_batches(images, batch_size):
        out_logits, out_features = fn(check_image_batch(batch, shape, who))
        logits.append(out_logits.numpy())
        features.append(out_features.numpy())
    if not logits:
        raise ValueError(f"{who}: no images to classify")
    return (np.concatenate(logits).astype(np.float64),
            np.concatenate(features).astype(np.float64))
