"""The sampler: ordered batches with padding dropped, seeded latents, BN modes that never
change the model, and standing statistics equal to the average of batch statistics."""
import numpy as np
import pytest
from tiny_configs import tiny_model

import replication
from sngan import models
from sngan.sampling import Sampler, balanced_labels, latent_batch


@pytest.fixture(scope="module")
def sampler():
    cfg = tiny_model()
    g = models.build_generator(cfg)
    for bn in g.bn_layers:  # moving statistics unlike any batch's, as after training
        bn.moving_mean.assign(np.full(bn.moving_mean.shape, 0.5, np.float32))
        bn.moving_variance.assign(np.full(bn.moving_variance.shape, 3.0, np.float32))
    return Sampler(g, replication.make_replicator("default"), cfg.z_dim, cfg.num_classes)


def test_batches_cover_the_request_in_order(sampler):
    labels = np.array([3, 1, 4, 1, 5, 9, 2], np.int32)
    got = list(sampler.batches(7, seed=0, labels=labels, batch_size=4))
    assert [len(x) for x, _ in got] == [4, 3]  # the padded last batch is cut back
    np.testing.assert_array_equal(np.concatenate([y for _, y in got]), labels)
    images = np.concatenate([x for x, _ in got])
    assert images.shape == (7, 32, 32, 1) and np.abs(images).max() <= 1.0
    # latents depend on (seed, batch index) only: the first batch alone is the same
    first = sampler.sample(4, seed=0, labels=labels[:4], batch_size=4)
    np.testing.assert_allclose(first, images[:4], atol=1e-6)
    other_seed = sampler.sample(4, seed=1, labels=labels[:4], batch_size=4)
    assert np.abs(other_seed - first).max() > 1e-3


def test_defaults_and_refusals(sampler):
    np.testing.assert_array_equal(balanced_labels(12, 10), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1])
    assert latent_batch(3, 1, 5, 16).shape == (5, 16)
    np.testing.assert_array_equal(latent_batch(3, 1, 5, 16), latent_batch(3, 1, 5, 16))
    with pytest.raises(ValueError, match="bn_mode"):
        list(sampler.batches(4, seed=0, bn_mode="frozen"))
    with pytest.raises(ValueError, match="3 labels for 4 samples"):
        list(sampler.batches(4, seed=0, labels=np.zeros(3, np.int32)))


def test_bn_modes_restore_the_model_and_differ(sampler):
    before = [(m.copy(), v.copy()) for m, v in sampler.bn_state()]
    out = {mode: sampler.sample(8, seed=2, batch_size=8, bn_mode=mode, standing_batches=2)
           for mode in ("batch", "moving", "standing")}
    for (m0, v0), (m1, v1) in zip(before, sampler.bn_state()):
        np.testing.assert_array_equal(m0, m1)
        np.testing.assert_array_equal(v0, v1)
    assert np.abs(out["batch"] - out["moving"]).max() > 1e-3
    assert np.abs(out["standing"] - out["moving"]).max() > 1e-3


def test_standing_statistics_average_the_batch_statistics(sampler):
    stats = sampler.standing_statistics(seed=4, batches=3, batch_size=8)
    # by hand: the BN input moments of each fresh batch, averaged, for the first BN layer
    g = sampler.generator
    first_bn = g.blocks[0].bn1  # the conditional BN that owns g.bn_layers[0]
    assert first_bn.bn is g.bn_layers[0]
    saved = sampler.bn_state()  # the training-mode passes below move the moving statistics
    means = []
    for i in range(3):
        z = latent_batch(5, i, 8, 16)  # standing statistics draw from seed + 1
        captured = {}
        call = first_bn.call

        def spy(x, *args, **kwargs):
            captured["x"] = x.numpy()
            return call(x, *args, **kwargs)

        first_bn.call = spy
        try:
            g(z, balanced_labels(8, 10), training=True)
        finally:
            first_bn.call = call
        means.append(captured["x"].reshape(-1, captured["x"].shape[-1]).mean(0))
    sampler.set_bn_state(saved)
    np.testing.assert_allclose(stats[0][0], np.mean(means, 0), rtol=1e-4, atol=1e-5)
