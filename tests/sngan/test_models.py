"""SN-GAN generator / projection discriminator: shapes, ranges, sizes, wiring, replicas."""
import dataclasses
import time

import keras
import numpy as np
import pytest
import tensorflow as tf
from numpy_reference import avg_pool_2x2, conv_same

from experiments.configs import preset
from sngan import models
from sngan.config import ModelConfig
from sngan.layers import SNConv2D, SNDense, SNEmbedding

# The study's preset models (experiments/configs/), whose sizes docs/architecture.md lists.
PRESET_MODELS = {name: preset(name).model for name in ("fashion_mnist", "cifar10", "imagenet128")}


@pytest.fixture(autouse=True)
def _seeded():
    """Keras initialisers draw from its global seed: fix it so every run sees the same weights."""
    keras.utils.set_random_seed(0)


def _small(cfg, ch=4):
    return dataclasses.replace(cfg, g_ch=ch, d_ch=ch)


# Each preset's model config; 64/128 at small widths (their full sizes are counted below).
CONFIGS = {
    "fashion_mnist": PRESET_MODELS["fashion_mnist"],
    "cifar10": PRESET_MODELS["cifar10"],
    "imagenet128_ch4": _small(PRESET_MODELS["imagenet128"]),
    "res64_ch4": ModelConfig(resolution=64, image_channels=3, num_classes=5, z_dim=16,
                             g_ch=4, d_ch=4),
    "unconditional32": ModelConfig(resolution=32, image_channels=3, num_classes=0, z_dim=8,
                                   g_ch=8, d_ch=8),
}


@pytest.fixture(scope="module")
def built():
    """`built(name)`: the generator and discriminator of CONFIGS[name], built once per module
    (building costs more than running them). For tests that only read shapes and counts:
    a test that needs untouched weights or statistics builds its own."""
    cache = {}

    def get(name):
        if name not in cache:
            cfg = CONFIGS[name]
            cache[name] = models.build_generator(cfg), models.build_discriminator(cfg)
        return cache[name]

    return get


def _inputs(cfg, batch, seed=0):
    z = tf.random.stateless_normal([batch, cfg.z_dim], seed=[seed, 0])
    labels = tf.constant(np.arange(batch) % max(cfg.num_classes, 1), tf.int32) \
        if cfg.num_classes else None
    return z, labels


def expected_g_params(cfg):
    """Count from the architecture's description, independently of the Keras code."""
    arch = models.ARCHITECTURES[cfg.resolution]
    w = [m * cfg.g_ch for m in arch.g_widths]
    per_channel_bn = 2 * cfg.num_classes if cfg.num_classes else 2  # gain + bias
    n = cfg.z_dim * 16 * w[0] + 16 * w[0]  # linear z -> 4x4xw0
    for cin, cout in zip(w, w[1:]):
        n += per_channel_bn * (cin + cout)  # two conditional BNs
        n += (9 * cin * cout + cout) + (9 * cout * cout + cout) + (cin * cout + cout)
    return n + 2 * w[-1] + 9 * w[-1] * cfg.image_channels + cfg.image_channels


def expected_d_params(cfg):
    arch = models.ARCHITECTURES[cfg.resolution]
    cin, n = cfg.image_channels, 0
    for i, (m, down) in enumerate(arch.d_blocks):
        cout = m * cfg.d_ch
        hidden = cout if i == 0 else cin
        n += 9 * cin * hidden + hidden + 9 * hidden * cout + cout
        if i == 0 or down or cin != cout:
            n += cin * cout + cout
        cin = cout
    n += cin + (1 if arch.d_head_bias else 0)
    return n + cfg.num_classes * cin


@pytest.mark.parametrize("name", list(CONFIGS))
def test_output_shapes_and_ranges(name, built):
    cfg = CONFIGS[name]
    g, d = built(name)
    z, labels = _inputs(cfg, 3)
    r, c = cfg.resolution, cfg.image_channels
    for training in (True, False):
        images = g(z, labels, training=training).numpy()
        assert images.shape == (3, r, r, c)
        assert np.isfinite(images).all() and np.abs(images).max() <= 1.0
        assert images.std() > 0.05  # not a constant image
        logits = d(images, labels, training=training).numpy()
        assert logits.shape == (3,) and np.isfinite(logits).all()
    assert models.count_params(g) == expected_g_params(cfg)
    assert models.count_params(d) == expected_d_params(cfg)


def test_full_imagenet128_parameter_counts():
    """The TF-Replicator study's models at full width (ch 64, 1000 classes)."""
    cfg = PRESET_MODELS["imagenet128"]
    start = time.perf_counter()
    g, d = models.build_generator(cfg), models.build_discriminator(cfg)
    n_g, n_d = models.count_params(g), models.count_params(d)
    print(f"imagenet128: G {n_g:,} D {n_d:,} params, built in "
          f"{time.perf_counter() - start:.1f} s")
    assert n_g == expected_g_params(cfg) == 41_996_931
    assert n_d == expected_d_params(cfg) == 30_041_857
    assert [l.filters for l in (blk.conv2 for blk in g.blocks)] == [1024, 512, 256, 128, 64]
    assert [blk.conv2.filters for blk in d.blocks] == [64, 128, 256, 512, 1024, 1024]
    assert d.embed.kernel.shape == (1000, 1024)


def test_preset_parameter_counts(built):
    counts = {}
    for name in ("fashion_mnist", "cifar10"):
        g, d = built(name)
        counts[name] = (models.count_params(g), models.count_params(d))
    print(counts)
    assert counts == {"fashion_mnist": (96_129, 66_528), "cifar10": (4_304_387, 1_055_104)}


def test_unconditional_variant_needs_no_labels(built):
    cfg = CONFIGS["unconditional32"]
    g, d = built("unconditional32")
    images = g(tf.random.normal([2, cfg.z_dim]), training=True)
    assert d(images).shape == (2,)
    assert d.embed is None and not any(isinstance(l, SNEmbedding) for l in d.sn_layers)
    assert all(blk.bn1.gain.shape == (8,) for blk in g.blocks)


def test_projection_logit_is_linear_plus_class_embedding_dot_features():
    cfg = ModelConfig(resolution=32, image_channels=1, num_classes=4, z_dim=8, g_ch=4, d_ch=6)
    d = models.build_discriminator(cfg)
    x = tf.random.stateless_normal([3, 32, 32, 1], seed=[1, 2])
    h = x
    for block in d.blocks:
        h = block(h)
    h = tf.reduce_sum(tf.nn.relu(h), axis=(1, 2)).numpy()  # [3, 6]
    w = d.linear.normalized_kernel().numpy()
    e = d.embed.normalized_kernel().numpy()
    for y in ([0, 1, 2], [3, 3, 0]):
        expected = h @ w[:, 0] + np.sum(e[y] * h, axis=1)
        np.testing.assert_allclose(d(x, tf.constant(y)), expected, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="needs labels"):
        d(x)


def test_generator_is_class_conditional():
    cfg = ModelConfig(resolution=32, image_channels=3, num_classes=3, z_dim=8, g_ch=8, d_ch=8)
    g = models.build_generator(cfg)
    rng = np.random.default_rng(0)
    for blk in g.blocks:  # at init every class has gain 1 / bias 0; make them differ
        for bn in (blk.bn1, blk.bn2):
            bn.gain.assign(1 + 0.3 * rng.normal(size=bn.gain.shape))
            bn.bias.assign(0.3 * rng.normal(size=bn.bias.shape))
    z = tf.tile(tf.random.normal([1, 8]), [4, 1])
    images = g(z, tf.constant([0, 0, 1, 2]), training=False).numpy()
    np.testing.assert_array_equal(images[0], images[1])
    assert np.abs(images[0] - images[2]).max() > 1e-2
    assert np.abs(images[2] - images[3]).max() > 1e-2


def test_bn_and_sn_layer_lists_and_their_updates():
    cfg = CONFIGS["res64_ch4"]
    g, d = models.build_generator(cfg), models.build_discriminator(cfg)
    assert len(g.bn_layers) == 2 * 4 + 1
    assert all(isinstance(b, keras.layers.BatchNormalization) for b in g.bn_layers)
    assert all(not b.center and not b.scale and b.synchronized for b in g.bn_layers)
    # 5 blocks x (conv1, conv2, shortcut) + linear + embedding
    assert len(d.sn_layers) == 17
    assert {type(l) for l in d.sn_layers} == {SNConv2D, SNDense, SNEmbedding}
    names = [l.name for l in d.sn_layers]  # sigma summaries are keyed by layer name
    assert len(set(names)) == len(names) and names[:3] == [
        "block1_conv1", "block1_conv2", "block1_shortcut"]

    z, labels = _inputs(cfg, 4)
    images = g(z, labels, training=False)
    d(images, labels, training=False)
    assert all(np.all(b.moving_mean.numpy() == 0) for b in g.bn_layers)
    assert all(l.sigma.numpy() == 1.0 for l in d.sn_layers)  # never written yet

    u_before = [l.u.numpy() for l in d.sn_layers]
    images = g(z, labels, training=True)
    d(images, labels, training=True)
    assert all(np.abs(b.moving_mean.numpy()).max() > 0 for b in g.bn_layers)
    assert all(np.abs(l.u.numpy() - u).max() > 0 for l, u in zip(d.sn_layers, u_before))
    assert all(l.sigma.numpy() != 1.0 for l in d.sn_layers)


def test_generator_on_4_replicas_equals_one_device_with_cross_replica_bn(strategy4):
    """Cross-replica BN makes a G step on 4 shards identical to one on the global batch."""
    cfg = ModelConfig(resolution=32, image_channels=1, num_classes=3, z_dim=8, g_ch=8, d_ch=8)
    z, labels = _inputs(cfg, 8, seed=3)
    z = z + tf.repeat(tf.range(4, dtype=tf.float32), 2)[:, None]  # shards differ
    one = models.build_generator(cfg)
    with strategy4.scope():
        g = models.build_generator(cfg)
        g.set_weights(one.get_weights())
    expected = one(z, labels, training=True).numpy()
    shards = strategy4.experimental_distribute_values_from_function(
        lambda ctx: (z[2 * ctx.replica_id_in_sync_group:][:2],
                     labels[2 * ctx.replica_id_in_sync_group:][:2]))
    out = tf.function(lambda s: strategy4.run(
        lambda zz, yy: g(zz, yy, training=True), args=s))(shards)
    # (per-replica BN differing from this is checked on the layer, test_layers_batch_norm.py)
    np.testing.assert_allclose(np.concatenate(strategy4.experimental_local_results(out)),
                               expected, atol=2e-5)
    for bn_one, bn_four in zip(one.bn_layers, g.bn_layers):
        for replica_mean in bn_four.moving_mean.value.values:
            np.testing.assert_allclose(replica_mean, bn_one.moving_mean.numpy(), atol=1e-6)


def test_upsample_is_nearest_neighbour_and_its_gradient_sums_each_2x2_block():
    x = tf.constant(np.random.default_rng(3).normal(size=(2, 3, 4, 5)), tf.float32)
    dy = tf.constant(np.random.default_rng(4).normal(size=(2, 6, 8, 5)), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        up = models._upsample(x)
    np.testing.assert_array_equal(up, np.repeat(np.repeat(x.numpy(), 2, 1), 2, 2))
    blocks = dy.numpy().reshape(2, 3, 2, 4, 2, 5).sum(axis=(2, 4))
    np.testing.assert_allclose(tape.gradient(up, x, output_gradients=dy), blocks, rtol=1e-6,
                               atol=1e-6)


def test_generator_block_is_sngan_block_in_numpy():
    """SN-GAN's up-sampling Block (sngan_projection, gen_models/resblocks.py) in numpy:
    BN-ReLU-up-conv3x3-BN-ReLU-conv3x3, shortcut up-conv1x1, with the conditional BN in
    inference mode (moving statistics, per-class gain and bias) set to non-trivial values."""
    rng = np.random.default_rng(6)
    block = models.GBlock(6, num_classes=3, cross_replica=False, bn_momentum=0.9, name="blk")
    x = rng.normal(size=(2, 3, 5, 4)).astype(np.float32)
    labels = np.array([2, 0], np.int32)
    block(tf.constant(x), tf.constant(labels))  # builds
    for cbn in (block.bn1, block.bn2):
        for v in (cbn.gain, cbn.bias, cbn.bn.moving_mean):
            v.assign(rng.normal(size=v.shape).astype(np.float32))
        cbn.bn.moving_variance.assign(rng.uniform(0.5, 2.0, cbn.bn.moving_variance.shape))
    for conv in (block.conv1, block.conv2, block.shortcut):
        conv.bias.assign(rng.normal(size=conv.bias.shape).astype(np.float32))
    out = block(tf.constant(x), tf.constant(labels), training=False).numpy()

    def bn(h, cbn):
        m, v = cbn.bn.moving_mean.numpy(), cbn.bn.moving_variance.numpy()
        gain, bias = cbn.gain.numpy()[labels], cbn.bias.numpy()[labels]
        return ((h - m) / np.sqrt(v + cbn.bn.epsilon) * gain[:, None, None]
                + bias[:, None, None])

    def up(h):
        return np.repeat(np.repeat(h, 2, axis=1), 2, axis=2)
    w = {c: (c.kernel.numpy(), c.bias.numpy()) for c in (block.conv1, block.conv2,
                                                         block.shortcut)}
    relu = lambda a: np.maximum(a, 0.0)  # noqa: E731
    h = conv_same(up(relu(bn(x, block.bn1))), *w[block.conv1])
    h = conv_same(relu(bn(h, block.bn2)), *w[block.conv2])
    expected = h + conv_same(up(x), *w[block.shortcut])
    assert out.shape == (2, 6, 10, 6)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("optimized,in_ch,ch,down", [(True, 3, 6, True), (False, 4, 6, True),
                                                     (False, 5, 5, False), (False, 4, 6, False)])
def test_discriminator_block_is_sngan_block_in_numpy(optimized, in_ch, ch, down):
    """SN-GAN's DBlock / OptimizedDisBlock (sngan_projection, dis_models/resblocks.py), with
    the pooling where the chainer code has it: after each branch's convolutions (the
    optimised block's shortcut pools first)."""
    block = models.DBlock(in_ch, ch, down, optimized=optimized, name="blk")
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 8, 6, in_ch)).astype(np.float32)
    block(tf.constant(x))  # builds
    for layer in block.sn_layers:  # non-zero biases: they pass through the pooling too
        layer.bias.assign(rng.normal(size=layer.bias.shape).astype(np.float32))
    out = block(tf.constant(x)).numpy()  # inference: stored u, nothing updated
    w = {l: (l.normalized_kernel(False).numpy(), l.bias.numpy()) for l in block.sn_layers}
    relu = lambda a: np.maximum(a, 0.0)  # noqa: E731
    if optimized:
        h = avg_pool_2x2(conv_same(relu(conv_same(x, *w[block.conv1])), *w[block.conv2]))
        skip = conv_same(avg_pool_2x2(x), *w[block.shortcut])
    else:
        h = conv_same(relu(conv_same(relu(x), *w[block.conv1])), *w[block.conv2])
        skip = x if block.shortcut is None else conv_same(x, *w[block.shortcut])
        if down:
            h, skip = avg_pool_2x2(h), avg_pool_2x2(skip)
    assert (block.shortcut is None) == (not optimized and not down and in_ch == ch)
    np.testing.assert_allclose(out, h + skip, rtol=1e-5, atol=1e-5)
