"""GAN losses against the formulas written out in numpy."""
import numpy as np
import pytest
import tensorflow as tf

from sngan import losses

REAL = np.array([-2.0, -0.5, 0.0, 0.99, 1.0, 1.5, 3.0], np.float32)
FAKE = np.array([-3.0, -1.0, -0.2, 0.0, 0.7, 2.0, -1.5], np.float32)


def _softplus(x):
    return np.logaddexp(0.0, x.astype(np.float64))


def test_hinge_losses():
    d = losses.discriminator_loss("hinge", REAL, FAKE).numpy()
    np.testing.assert_allclose(d, np.maximum(0, 1 - REAL) + np.maximum(0, 1 + FAKE), rtol=1e-6)
    np.testing.assert_allclose(d, [3.0, 1.5, 1.8, 1.01, 1.7, 3.0, 0.0], rtol=1e-6)
    g = losses.generator_loss("hinge", FAKE).numpy()
    np.testing.assert_allclose(g, -FAKE, rtol=1e-6)


def test_non_saturating_losses():
    sigmoid = 1 / (1 + np.exp(-REAL.astype(np.float64)))
    d = losses.discriminator_loss("non_saturating", REAL, FAKE).numpy()
    np.testing.assert_allclose(d, _softplus(-REAL) + _softplus(FAKE), rtol=1e-5)
    # -log D(x) - log(1 - D(G(z))) with D = sigmoid: no label smoothing
    np.testing.assert_allclose(losses.discriminator_loss("non_saturating", REAL, REAL).numpy(),
                               -np.log(sigmoid) - np.log(1 - sigmoid), rtol=1e-5)
    g = losses.generator_loss("non_saturating", FAKE).numpy()
    np.testing.assert_allclose(g, _softplus(-FAKE), rtol=1e-5)  # -log sigmoid(D(G(z)))


def test_non_saturating_generator_gradient():
    fake = tf.constant(FAKE)
    with tf.GradientTape() as tape:
        tape.watch(fake)
        loss = tf.reduce_sum(losses.generator_loss("non_saturating", fake))
    sigmoid = 1 / (1 + np.exp(-FAKE.astype(np.float64)))
    np.testing.assert_allclose(tape.gradient(loss, fake), sigmoid - 1, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", losses.LOSSES)
def test_losses_are_per_example_inside_tf_function(kind):
    real, fake = tf.constant(REAL[:4]), tf.constant(FAKE[:4])
    d, g = tf.function(lambda: (losses.discriminator_loss(kind, real, fake),
                                losses.generator_loss(kind, fake)))()
    assert d.shape == (4,) and g.shape == (4,)


def test_unknown_loss_is_rejected():
    with pytest.raises(ValueError, match="hinge"):
        losses.generator_loss("wasserstein", FAKE)
