"""Spectral norm, conditional BN and the convolutions with up-sampling or pooling folded in,
against numpy, SVD, finite differences, Keras's conv and one device."""
import keras
import numpy as np
import pytest
import tensorflow as tf
from numpy_reference import avg_pool_2x2, conv_same

from sngan.layers import (
    ConditionalBatchNorm,
    SNConv2D,
    SNDense,
    SNEmbedding,
    UpsampleConv2D,
)


@pytest.fixture(autouse=True)
def _seeded():
    """Keras initialisers draw from its global seed: fix it so every run sees the same weights."""
    keras.utils.set_random_seed(0)


def _replicas(variable):
    """The per-replica copies of a Keras variable created under a strategy."""
    return getattr(variable.value, "values", (variable.value,))


def _converge(layer, x, calls=100):
    step = tf.function(lambda: layer(x, training=True))
    for _ in range(calls):
        step()


def _top_singular(kernel):
    w = np.asarray(kernel, np.float64).reshape(-1, kernel.shape[-1])
    _, s, vt = np.linalg.svd(w)
    return s[0], vt[0]


# -- spectral norm: sigma vs SVD ---------------------------------------------------------------
@pytest.mark.parametrize("kind", ["dense", "conv", "embedding"])
def test_sigma_matches_svd_and_output_uses_it(kind):
    rng = np.random.default_rng(0)
    if kind == "dense":
        layer, x = SNDense(6), tf.constant(rng.normal(size=(5, 9)), tf.float32)
    elif kind == "conv":  # kernel [3, 3, 4, 5] is normalised as a [36, 5] matrix
        layer, x = SNConv2D(5, 3), tf.constant(rng.normal(size=(2, 6, 6, 4)), tf.float32)
    else:
        layer, x = SNEmbedding(7, 6), tf.constant([0, 3, 6, 3])
    layer(x)  # build; then a seeded kernel and u, so the spectral gap is fixed
    layer.kernel.assign(rng.normal(size=layer.kernel.shape).astype(np.float32))
    layer.u.assign(rng.normal(size=layer.u.shape).astype(np.float32))
    sigma0, top_u = _top_singular(layer.kernel.numpy())
    _converge(layer, x)

    np.testing.assert_allclose(layer.sigma.numpy(), sigma0, rtol=1e-5)
    u = layer.u.numpy()[0]
    assert abs(u @ top_u) == pytest.approx(1.0, abs=1e-5)  # u -> top right singular vector

    w_bar = layer.kernel.numpy() / sigma0
    if kind == "dense":
        expected = x.numpy() @ w_bar + layer.bias.numpy()
    elif kind == "conv":  # TF's conv as the reference op; the normalisation is what's tested
        expected = tf.nn.conv2d(x, w_bar.astype(np.float32), 1, "SAME") + layer.bias.numpy()
    else:
        expected = w_bar[x.numpy()]
    np.testing.assert_allclose(layer(x, training=False), expected, rtol=1e-4, atol=1e-5)


def test_power_iteration_is_sngan_step():
    """One training call does v = n(u W^T), u' = n(v W), sigma = v W u'^T (SN-GAN max_sv)."""
    rng = np.random.default_rng(1)
    layer = SNDense(3, use_bias=False)
    layer.build((None, 4))
    w = rng.normal(size=(4, 3)).astype(np.float32)
    u0 = rng.normal(size=(1, 3)).astype(np.float32)
    layer.kernel.assign(w)
    layer.u.assign(u0)
    x = np.eye(4, dtype=np.float32)
    y = layer(x, training=True).numpy()

    def n(a):
        return a / (np.linalg.norm(a) + 1e-12)
    v = n(u0 @ w.T)
    u1 = n(v @ w)
    sigma = (v @ w @ u1.T).item()
    np.testing.assert_allclose(layer.u.numpy(), u1, rtol=1e-5)
    np.testing.assert_allclose(layer.sigma.numpy(), sigma, rtol=1e-5)
    np.testing.assert_allclose(y, w / sigma, rtol=1e-5)


def test_u_and_sigma_frozen_unless_training():
    layer = SNConv2D(3, 3)
    x = tf.random.normal([2, 5, 5, 2], seed=1)
    layer(x)
    u0, s0 = layer.u.numpy(), layer.sigma.numpy()
    layer(x, training=False)
    layer(x)
    np.testing.assert_array_equal(layer.u.numpy(), u0)
    np.testing.assert_array_equal(layer.sigma.numpy(), s0)
    layer(x, training=True)
    assert np.abs(layer.u.numpy() - u0).max() > 1e-3
    assert layer.sigma.numpy() != s0
    assert [v.name for v in layer.trainable_variables] == ["kernel", "bias"]


def test_checkpoint_restores_u_and_sigma(tmp_path):
    """Resuming must restore the power-iteration state, not just the weights."""
    layer = SNDense(3)
    x = tf.random.normal([2, 4], seed=2)
    layer(x, training=True)
    saved = [v.numpy() for v in (layer.kernel, layer.u, layer.sigma)]
    path = tf.train.Checkpoint(layer=layer).write(str(tmp_path / "ckpt"))
    for _ in range(3):
        layer(x, training=True)
    layer.kernel.assign(tf.zeros_like(layer.kernel))
    tf.train.Checkpoint(layer=layer).read(path).assert_consumed()
    for v, want in zip((layer.kernel, layer.u, layer.sigma), saved):
        np.testing.assert_array_equal(v.numpy(), want)


# -- spectral norm: gradient flows through sigma -----------------------------------------------
def test_gradient_matches_finite_differences_of_w_over_sigma():
    """d/dW c.(x W/sigma(W)) has a -c.(xW)/sigma^2 * v u^T term that a fixed sigma misses."""
    rng = np.random.default_rng(2)
    q1, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    q2, _ = np.linalg.qr(rng.normal(size=(2, 2)))
    w = q1[:, :2] @ np.diag([3.0, 1.0]) @ q2.T  # singular values 3 and 1: fast power iteration
    x = rng.normal(size=(4, 3))
    c = rng.normal(size=(4, 2))

    def f(w64):  # the true SN objective, float64, exact sigma
        return float(np.sum(c * (x @ w64 / np.linalg.svd(w64, compute_uv=False)[0])))

    eps = 1e-6
    fd = np.zeros_like(w)
    for idx in np.ndindex(*w.shape):
        dw = np.zeros_like(w)
        dw[idx] = eps
        fd[idx] = (f(w + dw) - f(w - dw)) / (2 * eps)

    layer = SNDense(2, use_bias=False)
    layer.build((None, 3))
    layer.kernel.assign(w.astype(np.float32))
    _converge(layer, tf.constant(x, tf.float32), calls=30)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(c.astype(np.float32) * layer(x.astype(np.float32)))
    grad = tape.gradient(loss, layer.kernel).numpy()
    fixed_sigma_grad = x.T @ c / 3.0  # gradient of c.(x W / sigma) with sigma a constant

    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5)
    sigma_term = fd - fixed_sigma_grad
    assert np.abs(sigma_term).max() > 0.1  # the sigma term is not negligible here
    np.testing.assert_allclose(grad - fixed_sigma_grad, sigma_term, rtol=1e-3, atol=1e-5)


def test_embedding_gradient_is_dense():
    layer = SNEmbedding(5, 3)
    layer.build()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.constant([1, 1, 4])))
    grad = tape.gradient(loss, layer.kernel)
    assert isinstance(grad, tf.Tensor) and grad.shape == (5, 3)


# -- spectral norm under 4 replicas -------------------------------------------------------------
def test_u_identical_on_all_replicas_after_steps_on_different_data(strategy4):
    strategy = strategy4
    with strategy.scope():
        dense, conv, embed = SNDense(4), SNConv2D(3, 3), SNEmbedding(5, 3)
        conv.build((None, 6, 6, 2))
        dense.build((None, 3))
        embed.build()
        layers = (conv, dense, embed)
        variables = [v for l in layers for v in l.trainable_variables]
        opt = keras.optimizers.Adam(0.05)
        opt.build(variables)

    def step_fn(x, y):
        with tf.GradientTape() as tape:
            h = tf.reduce_sum(conv(x, training=True), axis=(1, 2))
            out = dense(h, training=True)[:, :3] * embed(y, training=True)
            loss = tf.reduce_sum(out ** 2) / 8.0
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))

    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 6, 6, 2)).astype(np.float32) * np.arange(1, 9)[:, None, None, None]
    y = np.array([0, 1, 2, 3, 4, 0, 1, 2])
    dataset = strategy.experimental_distribute_values_from_function(
        lambda ctx: (x[2 * ctx.replica_id_in_sync_group:][:2],
                     y[2 * ctx.replica_id_in_sync_group:][:2]))
    step = tf.function(lambda xy: strategy.run(step_fn, args=xy))

    # Desynchronise u on replicas 1-3: the next update must still make all replicas equal
    # (with aggregation "none" each replica would silently keep its own u).
    for l in layers:
        for replica_u in _replicas(l.u)[1:]:
            replica_u.assign(rng.normal(size=replica_u.shape).astype(np.float32))
    u_replica0 = [_replicas(l.u)[0].numpy() for l in layers]
    for _ in range(3):
        step(dataset)

    for l, u0 in zip(layers, u_replica0):
        copies = [v.numpy() for v in _replicas(l.u)]
        for c in copies[1:]:
            np.testing.assert_array_equal(c, copies[0])
        assert np.abs(copies[0] - u0).max() > 1e-4  # it did move
        sigmas = [v.numpy() for v in _replicas(l.sigma)]
        assert len(set(sigmas)) == 1
        kernels = [v.numpy() for v in _replicas(l.kernel)]
        for k in kernels[1:]:
            np.testing.assert_array_equal(k, kernels[0])


# -- conditional batch norm --------------------------------------------------------------------
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
    moving = [v.numpy() for v in _replicas(cbn.bn.moving_mean)]
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


# -- up-sampling and pooling folded into the 3x3 convolution --------------------------------------
def _nearest_x2(x):
    return np.repeat(np.repeat(x, 2, axis=1), 2, axis=2)


def _forward_and_grads(fn, x, variables, upstream):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(fn(x) * upstream)
    return tape.gradient(loss, [x] + variables)


def test_upsample_conv_equals_3x3_convolution_of_the_upsampled_map_and_its_gradients():
    """Output vs numpy; input, kernel and bias gradients vs Keras's Conv2D applied to the
    up-sampled map (float64). A non-square map, distinct channel counts and a kernel with no
    symmetry catch a wrong flip, parity or channel order."""
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(2, 3, 5, 4)))
    upstream = tf.constant(rng.normal(size=(2, 6, 10, 6)))
    folded = UpsampleConv2D(6, dtype="float64")
    plain = keras.layers.Conv2D(6, 3, padding="same", dtype="float64")
    folded.build(x.shape), plain.build((2, 6, 10, 4))
    for layer in (folded, plain):
        layer.kernel.assign(rng.normal(size=(3, 3, 4, 6)) if layer is folded
                            else folded.kernel.numpy())
        layer.bias.assign(np.linspace(-1.0, 1.0, 6))
    assert folded.kernel.path.endswith("/kernel") and folded.kernel.shape == plain.kernel.shape

    y = folded(x)
    assert y.shape == (2, 6, 10, 6) == folded.compute_output_shape(x.shape)
    np.testing.assert_allclose(
        y, conv_same(_nearest_x2(x.numpy()), folded.kernel.numpy(), folded.bias.numpy()),
        rtol=1e-12, atol=1e-12)
    up = tf.constant(_nearest_x2(x.numpy()))
    got = _forward_and_grads(folded, x, [folded.kernel, folded.bias], upstream)
    want = _forward_and_grads(plain, up, [plain.kernel, plain.bias], upstream)
    blocks = want[0].numpy().reshape(2, 3, 2, 5, 2, 4).sum(axis=(2, 4))  # d up / d x
    np.testing.assert_allclose(got[0], blocks, rtol=1e-12, atol=1e-12)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    config = folded.get_config()
    assert not {"kernel_size", "strides", "padding"} & set(config)  # fixed by the class
    rebuilt = UpsampleConv2D.from_config(config)
    assert (rebuilt.filters, rebuilt.kernel_size, rebuilt.padding) == (6, (3, 3), "same")


def test_upsample_conv_takes_an_unknown_batch_and_map_size():
    layer = UpsampleConv2D(3)
    fn = tf.function(layer).get_concrete_function(tf.TensorSpec([None, None, None, 2]))
    assert fn.structured_outputs.shape.as_list() == [None, None, None, 3]
    x = np.random.default_rng(2).normal(size=(3, 4, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(fn(tf.constant(x)), layer(x), rtol=1e-6, atol=1e-6)
    assert fn(tf.constant(x)).shape == (3, 8, 4, 3)


def test_pooled_sn_conv_equals_conv_then_pool_and_its_gradients():
    """The same variables with pooled=False followed by 2x2 mean pooling: output, the input,
    kernel and bias gradients (through sigma too), and the stored u and sigma (float64)."""
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(2, 6, 4, 3)))
    upstream = tf.constant(rng.normal(size=(2, 3, 2, 5)))
    pooled = SNConv2D(5, 3, pooled=True, dtype="float64")
    plain = SNConv2D(5, 3, dtype="float64")
    pooled.build(x.shape), plain.build(x.shape)
    kernel, u = rng.normal(size=(3, 3, 3, 5)), rng.normal(size=(1, 5))
    for layer in (pooled, plain):
        layer.kernel.assign(kernel), layer.u.assign(u), layer.bias.assign(np.arange(5.0))

    y = pooled(x)
    np.testing.assert_allclose(
        y, avg_pool_2x2(conv_same(x.numpy(), pooled.normalized_kernel().numpy())) + np.arange(5.0),
        rtol=1e-12, atol=1e-12)
    got = _forward_and_grads(lambda t: pooled(t, training=True), x,
                             [pooled.kernel, pooled.bias], upstream)
    want = _forward_and_grads(
        lambda t: tf.nn.avg_pool2d(plain(t, training=True), 2, 2, "VALID"), x,
        [plain.kernel, plain.bias], upstream)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(pooled.u.numpy(), plain.u.numpy(), rtol=1e-12)
    np.testing.assert_allclose(pooled.sigma.numpy(), plain.sigma.numpy(), rtol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=1), dict(strides=2),
                                    dict(padding="valid")])
def test_pooled_sn_conv_refuses_what_it_cannot_fold(kwargs):
    with pytest.raises(ValueError, match="pooled=True"):
        SNConv2D(4, **{"kernel_size": 3, **kwargs}, pooled=True)
    assert SNConv2D(4, 3, strides=(1, 1), pooled=True).pooled


def test_pooled_sn_conv_refuses_an_odd_map():
    """Pooling would drop the odd row; the strided conv would pad it into another output."""
    layer = SNConv2D(2, 3, pooled=True)
    with pytest.raises(ValueError, match="even height and width"):
        layer(tf.zeros([1, 5, 4, 3]))
    fn = tf.function(layer).get_concrete_function(tf.TensorSpec([None, None, None, 3]))
    assert fn(tf.zeros([1, 4, 6, 3])).shape == (1, 2, 3, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="even height and width"):
        fn(tf.zeros([1, 4, 7, 3]))
