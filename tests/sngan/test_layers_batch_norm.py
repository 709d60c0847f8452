"""ConditionalBatchNorm against numpy, and its cross-replica statistics on 4 replicas
against one device on the global batch."""
import numpy as np
import pytest
import tensorflow as tf
from per_replica import replica_copies

from sngan.layers import ConditionalBatchNorm

# Keras initialisers draw from its global seed: every test starts from seed 0 (conftest.py)
pytestmark = pytest.mark.usefixtures("keras_seed0")


def _cbn_reference(x, labels, gain, bias, eps=1e-5):
    mean = x.mean(axis=(0, 1, 2))
    var = x.var(axis=(0, 1, 2))
    return (x - mean) / np.sqrt(var + eps) * gain[labels][:, None, None] + \
        bias[labels][:, None, None]


def _random_cbn_params(rng, classes, channels):
    return (1 + 0.5 * rng.normal(size=(classes, channels))).astype(np.float32), \
        rng.normal(size=(classes, channels)).astype(np.float32)


def test_conditional_bn_matches_numpy_and_updates_moving_stats():
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(6, 3, 3, 4)) * 2 + 1).astype(np.float32)
    labels = np.array([0, 2, 1, 2, 0, 1])
    cbn = ConditionalBatchNorm(3, momentum=0.9)
    cbn.build(x.shape)
    np.testing.assert_array_equal(cbn.gain.numpy(), 1.0)  # SN-GAN: gain starts at 1
    np.testing.assert_array_equal(cbn.bias.numpy(), 0.0)
    gain, bias = _random_cbn_params(rng, 3, 4)
    cbn.gain.assign(gain)
    cbn.bias.assign(bias)

    out = cbn(x, labels, training=True)
    np.testing.assert_allclose(out, _cbn_reference(x, labels, gain, bias), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cbn.bn.moving_mean.numpy(), 0.1 * x.mean(axis=(0, 1, 2)),
                               rtol=1e-5)
    np.testing.assert_allclose(cbn.bn.moving_variance.numpy(),
                               0.9 + 0.1 * x.var(axis=(0, 1, 2)), rtol=1e-5)

    mm, mv = cbn.bn.moving_mean.numpy(), cbn.bn.moving_variance.numpy()
    out = cbn(x, labels, training=False)  # inference: moving statistics, no update
    expected = (x - mm) / np.sqrt(mv + 1e-5) * gain[labels][:, None, None] + \
        bias[labels][:, None, None]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(cbn.bn.moving_mean.numpy(), mm)


def test_unconditional_bn_has_plain_gain_and_bias():
    cbn = ConditionalBatchNorm(0)
    x = np.random.default_rng(5).normal(size=(4, 2, 2, 3)).astype(np.float32)
    out = cbn(x, training=True)
    assert cbn.gain.shape == (3,) and cbn.bias.shape == (3,)
    ref = (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def _run_cbn(cross_replica, strategy, x, labels, gain, bias, weights):
    """Outputs, input gradients, summed param gradients, moving mean; batch split over replicas."""
    with strategy.scope():
        cbn = ConditionalBatchNorm(3, cross_replica=cross_replica, momentum=0.5)
        cbn.build((None,) + x.shape[1:])
        cbn.gain.assign(gain)
        cbn.bias.assign(bias)
    n = strategy.num_replicas_in_sync
    per = len(x) // n

    def fn(ctx):
        i = ctx.replica_id_in_sync_group
        return x[i * per:(i + 1) * per], labels[i * per:(i + 1) * per], \
            weights[i * per:(i + 1) * per]

    def step_fn(xb, yb, wb):
        with tf.GradientTape() as tape:
            tape.watch(xb)
            out = cbn(xb, yb, training=True)
            loss = tf.reduce_sum(out * wb) / len(x)  # per-replica share of the global loss
        gx, gg, gb = tape.gradient(loss, [xb, cbn.gain, cbn.bias])
        return out, gx, gg, gb

    values = strategy.experimental_distribute_values_from_function(fn)
    result = tf.function(lambda v: strategy.run(step_fn, args=v))(values)
    local = [strategy.experimental_local_results(r) for r in result]
    out, gx = np.concatenate(local[0]), np.concatenate(local[1])
    gg, gb = np.sum(local[2], axis=0), np.sum(local[3], axis=0)
    moving = [v.numpy() for v in replica_copies(cbn.bn.moving_mean)]
    return out, gx, gg, gb, moving


def test_cross_replica_bn_on_4_replicas_equals_one_device_on_global_batch(strategy4):
    rng = np.random.default_rng(6)
    # Replica k's shard is shifted by k: per-replica statistics would differ a lot.
    x = (rng.normal(size=(8, 3, 3, 5)) + np.repeat(np.arange(4), 2)[:, None, None, None]
         ).astype(np.float32)
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    weights = rng.normal(size=x.shape).astype(np.float32)
    gain, bias = _random_cbn_params(rng, 3, 5)

    one = _run_cbn(True, tf.distribute.OneDeviceStrategy("/cpu:0"), x, labels, gain, bias,
                   weights)
    four = _run_cbn(True, strategy4, x, labels, gain, bias, weights)
    np.testing.assert_allclose(four[0], one[0], atol=1e-5)  # outputs
    np.testing.assert_allclose(four[1], one[1], atol=1e-5)  # d loss / d x
    np.testing.assert_allclose(four[2], one[2], atol=1e-5)  # d loss / d gain
    np.testing.assert_allclose(four[3], one[3], atol=1e-5)  # d loss / d bias
    np.testing.assert_allclose(one[0], _cbn_reference(x, labels, gain, bias), atol=1e-4)
    for moving in four[4]:  # every replica's moving mean saw the global batch
        np.testing.assert_allclose(moving, one[4][0], atol=1e-6)

    per_replica = _run_cbn(False, strategy4, x, labels, gain, bias, weights)
    assert np.abs(per_replica[0] - one[0]).max() > 0.5
    expected = np.concatenate([_cbn_reference(x[i:i + 2], labels[i:i + 2], gain, bias)
                               for i in range(0, 8, 2)])
    np.testing.assert_allclose(per_replica[0], expected, atol=1e-3)
    # Per-replica BN leaves each replica with its own moving statistics.
    assert np.abs(per_replica[4][0] - per_replica[4][3]).max() > 0.5

