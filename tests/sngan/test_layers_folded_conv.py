"""UpsampleConv2D and SNConv2D(pooled=True): up-sampling or pooling folded into the 3x3
convolution, against numpy and Keras's Conv2D on the unfolded map, outputs and gradients."""
import keras
import numpy as np
import pytest
import tensorflow as tf
from numpy_reference import avg_pool_2x2, conv_same

from sngan.layers import SNConv2D, UpsampleConv2D

# Keras initialisers draw from its global seed: every test starts from seed 0 (conftest.py)
pytestmark = pytest.mark.usefixtures("keras_seed0")


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
