"""Generate images on every replica and gather them in order, with a recorded BN mode.

The latent codes come from the host, drawn per global batch from (seed, batch index), so the
same seed gives the same samples on 1 replica or on N (with cross-replica BN statistics the
generator's output does not depend on how the batch is split).

BN modes for the generator while sampling (they change IS/FID, so the mode is recorded):
- ``batch``: statistics of the current global sampling batch, as in training (default);
- ``moving``: the moving averages accumulated during training;
- ``standing``: averages of batch statistics over ``standing_batches`` fresh batches
  (compare_gan / BigGAN), computed just before sampling.
Moving statistics are restored afterwards, so sampling never changes the model.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import tensorflow as tf

from sngan.options import BN_MODES


def latent_batch(seed: int, batch_index: int, batch_size: int, z_dim: int) -> np.ndarray:
    return np.random.default_rng([seed, batch_index]).standard_normal(
        (batch_size, z_dim)).astype(np.float32)


def balanced_labels(num: int, num_classes: int) -> np.ndarray:
    return (np.arange(num) % max(num_classes, 1)).astype(np.int32)


class Sampler:
    def __init__(self, generator, replicator, z_dim: int, num_classes: int):
        self.generator = generator
        self.replicator = replicator
        self.z_dim = z_dim
        self.num_classes = num_classes
        self._fns: dict[str, tf.types.experimental.GenericFunction] = {}

    # -- compiled forward passes, one per (mode of BN) -------------------------------------
    def _forward(self, kind: str, z: np.ndarray, labels: np.ndarray) -> np.ndarray:
        if kind not in self._fns:
            training = kind != "infer"

            def replica_fn(z, y):
                return self.generator(z, y if self.num_classes else None, training=training)

            self._fns[kind] = tf.function(
                lambda z, y: self.replicator.run(replica_fn, z, y), autograph=False)
        b = self.replicator.per_replica_batch(len(z))
        z_dist = self.replicator.distribute_values(lambda r: tf.constant(z[r * b:(r + 1) * b]))
        y_dist = self.replicator.distribute_values(
            lambda r: tf.constant(labels[r * b:(r + 1) * b]))
        return self.replicator.gather(self._fns[kind](z_dist, y_dist)).numpy()

    def bn_state(self):
        return [(bn.moving_mean.numpy(), bn.moving_variance.numpy())
                for bn in self.generator.bn_layers]

    def set_bn_state(self, state):
        for bn, (mean, var) in zip(self.generator.bn_layers, state):
            bn.moving_mean.assign(mean)
            bn.moving_variance.assign(var)

    def standing_statistics(self, seed: int, batches: int, batch_size: int):
        """Average of per-batch statistics: momentum 0 makes each pass store its batch's."""
        layers = self.generator.bn_layers
        momenta = [bn.momentum for bn in layers]
        sums = None
        try:
            for bn in layers:
                bn.momentum = 0.0
            for i in range(batches):
                z = latent_batch(seed + 1, i, batch_size, self.z_dim)
                self._forward("standing", z, balanced_labels(batch_size, self.num_classes))
                state = self.bn_state()
                sums = state if sums is None else [
                    (a + m, b + v) for (a, b), (m, v) in zip(sums, state)]
        finally:
            for bn, m in zip(layers, momenta):
                bn.momentum = m
        return [(m / batches, v / batches) for m, v in sums]

    # -- public ------------------------------------------------------------------------
    def batches(self, num: int, seed: int, labels: np.ndarray | None = None,
                bn_mode: str = "batch", batch_size: int = 500,
                standing_batches: int = 10) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (images, labels) batches covering `num` samples, in order (bounded memory)."""
        if bn_mode not in BN_MODES:
            raise ValueError(f"bn_mode={bn_mode!r} is not one of {BN_MODES}")
        self.replicator.per_replica_batch(batch_size)  # fail early, with a clear message
        if labels is None:
            labels = balanced_labels(num, self.num_classes)
        labels = np.asarray(labels, np.int32)
        if len(labels) != num:
            raise ValueError(f"got {len(labels)} labels for {num} samples")
        saved = self.bn_state()
        try:
            if bn_mode == "standing":
                self.set_bn_state(self.standing_statistics(seed, standing_batches, batch_size))
            kind = "batch" if bn_mode == "batch" else "infer"
            for i, start in enumerate(range(0, num, batch_size)):
                y = labels[start:start + batch_size]
                n = len(y)
                if n < batch_size:  # pad the last batch; the padding is dropped below
                    y = np.concatenate([y, balanced_labels(batch_size - n, self.num_classes)])
                z = latent_batch(seed, i, batch_size, self.z_dim)
                images = self._forward(kind, z, y)
                if kind == "batch":
                    self.set_bn_state(saved)
                yield images[:n], y[:n]
        finally:
            self.set_bn_state(saved)

    def sample(self, num: int, seed: int, labels: np.ndarray | None = None, **kw) -> np.ndarray:
        return np.concatenate([x for x, _ in self.batches(num, seed, labels, **kw)])
