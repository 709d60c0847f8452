"""Spectral normalisation (SNDense, SNConv2D, SNEmbedding) against SVD, SN-GAN's power
iteration, finite differences and 4 replicas; batch norm and the folded convolutions are
test_layers_batch_norm.py and test_layers_folded_conv.py."""
import keras
import numpy as np
import pytest
import tensorflow as tf
from per_replica import replica_copies

from sngan.layers import SNConv2D, SNDense, SNEmbedding

# Keras initialisers draw from its global seed: every test starts from seed 0 (conftest.py)
pytestmark = pytest.mark.usefixtures("keras_seed0")


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
        for replica_u in replica_copies(l.u)[1:]:
            replica_u.assign(rng.normal(size=replica_u.shape).astype(np.float32))
    u_replica0 = [replica_copies(l.u)[0].numpy() for l in layers]
    for _ in range(3):
        step(dataset)

    for l, u0 in zip(layers, u_replica0):
        copies = [v.numpy() for v in replica_copies(l.u)]
        for c in copies[1:]:
            np.testing.assert_array_equal(c, copies[0])
        assert np.abs(copies[0] - u0).max() > 1e-4  # it did move
        sigmas = [v.numpy() for v in replica_copies(l.sigma)]
        assert len(set(sigmas)) == 1
        kernels = [v.numpy() for v in replica_copies(l.kernel)]
        for k in kernels[1:]:
            np.testing.assert_array_equal(k, kernels[0])

