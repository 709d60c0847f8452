"""The model library's named choices are the ones its code accepts: every listed loss and BN
mode works, anything else is refused naming the list; options import without TensorFlow."""
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tiny_configs import tiny_model

import replication
from sngan import losses, models, options
from sngan.sampling import Sampler


def test_options_and_configs_import_without_tensorflow():
    code = ("import sys; import sngan.options as o; import sngan.config; "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; print(o.CHECKPOINTS)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "checkpoints"


def test_every_listed_resolution_has_an_architecture():
    assert sorted(models.ARCHITECTURES) == sorted(options.RESOLUTIONS)


@pytest.mark.parametrize("kind", options.LOSSES)
def test_every_listed_loss_is_implemented(kind):
    real, fake = tf.constant([2.0, -0.5]), tf.constant([-2.0, 0.5])
    d, g = losses.discriminator_loss(kind, real, fake), losses.generator_loss(kind, fake)
    expected = {"hinge": ([0.0, 3.0], [2.0, -0.5]),  # relu(1 - r) + relu(1 + f), -f
                "non_saturating": (np.log1p(np.exp([-2.0, 0.5])) + np.log1p(np.exp([-2.0, 0.5])),
                                   np.log1p(np.exp([2.0, -0.5])))}[kind]
    np.testing.assert_allclose(d.numpy(), expected[0], rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), expected[1], rtol=1e-6)


def test_an_unlisted_loss_is_refused_naming_the_list():
    with pytest.raises(ValueError, match=r"unknown GAN loss 'wgan'; expected one of "
                                         r"\['hinge', 'non_saturating'\]"):
        losses.discriminator_loss("wgan", tf.zeros([1]), tf.zeros([1]))


def test_every_listed_bn_mode_samples_and_others_are_refused():
    cfg = tiny_model()
    replicator = replication.make_replicator("default")
    with replicator.context():
        generator = models.build_generator(cfg)
    sampler = Sampler(generator, replicator, cfg.z_dim, cfg.num_classes)
    for mode in options.BN_MODES:
        images = sampler.sample(4, seed=0, bn_mode=mode, batch_size=4, standing_batches=1)
        assert images.shape == (4, 32, 32, 1) and np.all(np.abs(images) <= 1.0), mode
    with pytest.raises(ValueError, match="bn_mode='averaged' is not one of"):
        sampler.sample(4, seed=0, bn_mode="averaged", batch_size=4)
