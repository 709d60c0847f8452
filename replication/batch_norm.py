"""Batch normalisation over the GLOBAL batch, with a hand-written gradient.

Same statistics as `cross_replica_moments` (one all-reduce of sum, sum of squares and count;
var = E[x^2] - E[x]^2), but written for speed on CPUs, where batch norm was the largest cost of
a training step after the convolutions (measured on a 2-core AVX-512 machine, TF 2.21):

* per-channel sums over an NHWC tensor are one batched matmul with a row of ones; TensorFlow's
  `reduce_sum` over the leading axes ran about 5x slower at the SN-GAN's shapes;
* the backward pass is the closed-form batch-norm gradient (one all-reduce of two per-channel
  vectors) instead of autodiff through the moments, which materialises broadcasts (Tile) and
  runs several more reductions;
* scale and offset are per-example rows, so a class-conditional gain and bias cost two
  element-wise passes in total (y = x * a + b), not four.

With one replica, or `cross_replica=False`, the all-reduces are skipped and the statistics are
the replica's own batch.
"""
from __future__ import annotations

import tensorflow as tf


def _example_sums(t: tf.Tensor) -> tf.Tensor:
    """[N, ..., C] -> [N, C]: each example's sum over its middle axes, as a batched matmul."""
    n, c = tf.shape(t)[0], t.shape[-1]
    t = tf.reshape(t, [n, -1, c])
    ones = tf.ones([n, 1, tf.shape(t)[1]], t.dtype)
    return tf.reshape(tf.matmul(ones, t), [n, c])


def _rows(v: tf.Tensor, rank: int) -> tf.Tensor:
    """[N or 1, C] -> [N or 1, 1, ..., 1, C], to broadcast against a rank-`rank` tensor."""
    return tf.reshape(v, [-1] + [1] * (rank - 2) + [v.shape[-1]])


def _sum_over_replicas(values: list, cross_replica: bool) -> list:
    ctx = tf.distribute.get_replica_context()
    if not cross_replica or ctx is None or ctx.num_replicas_in_sync == 1:
        return values
    return ctx.all_reduce(tf.distribute.ReduceOp.SUM, values)


def cross_replica_batch_norm(x, scale, offset, epsilon: float, cross_replica: bool = True):
    """(x - mean) / sqrt(var + epsilon) * scale + offset, with the global batch's moments.

    x: [N, ..., C] float; scale, offset: [N, C] (one row per example, e.g. a class-conditional
    gain and bias) or [1, C]. Returns (y, mean, variance); mean and variance ([C], the biased
    variance) carry no gradient: they are for moving averages. Gradients flow to x, scale and
    offset as if the replicas' batches were one batch on one device.
    """
    x = tf.convert_to_tensor(x)
    rank = x.shape.rank
    if rank is None or rank < 2 or x.shape[-1] is None:
        raise ValueError(f"cross_replica_batch_norm needs a known rank >= 2 and a known "
                         f"channel count, got shape {x.shape}")

    @tf.custom_gradient
    def normalise(x, scale, offset):
        count = tf.cast(tf.size(x, out_type=tf.int64) // x.shape[-1], x.dtype)
        total, total_sq, count = _sum_over_replicas(
            [tf.reduce_sum(_example_sums(x), 0),
             tf.reduce_sum(_example_sums(tf.square(x)), 0), count], cross_replica)
        mean = total / count
        variance = tf.maximum(total_sq / count - tf.square(mean), 0.0)
        inv = tf.math.rsqrt(variance + epsilon)
        a = scale * inv
        y = x * _rows(a, rank) + _rows(offset - mean * a, rank)

        def grad(dy, _dmean, _dvariance):
            d_offset = _example_sums(dy)  # [N, C]
            # sum over each example of dy * x_hat, with x_hat = (x - mean) * inv
            d_scale = inv * (_example_sums(dy * x) - mean * d_offset)
            # global sums of d x_hat and of d x_hat * x_hat, where d x_hat = dy * scale
            g1, g2 = _sum_over_replicas([tf.reduce_sum(scale * d_offset, 0),
                                         tf.reduce_sum(scale * d_scale, 0)], cross_replica)
            # dx = inv * (d x_hat - g1 / count - x_hat * g2 / count), linear in dy and x
            k = -tf.square(inv) * g2 / count
            k0 = -inv * g1 / count - mean * k
            dx = dy * _rows(a, rank) + (x * k + k0)

            def to_shape(g, param):  # a [1, C] parameter was broadcast over the examples
                return tf.reduce_sum(g, 0, keepdims=True) if param.shape[0] == 1 else g

            return dx, to_shape(d_scale, scale), to_shape(d_offset, offset)

        return (y, tf.stop_gradient(mean), tf.stop_gradient(variance)), grad

    scale = tf.convert_to_tensor(scale, x.dtype)
    offset = tf.convert_to_tensor(offset, x.dtype)
    if scale.shape.rank != 2 or offset.shape.rank != 2:
        raise ValueError(f"scale and offset must be [N, C] or [1, C] rows, got {scale.shape} "
                         f"and {offset.shape}")
    return normalise(x, scale, offset)
