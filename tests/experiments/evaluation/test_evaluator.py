"""The Evaluator: a committed generator scores as its record says, scores are a function of
(weights, evaluation seed), and every point is sampled through one twin generator."""
import os

import numpy as np
import pytest

import replication
from experiments import records, trained_generator
from experiments.configs import preset
from experiments.evaluation.evaluator import Evaluator
from sngan import models
from sngan.sampling import Sampler

REFERENCE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "results",
                         "fashion_mnist", "points")
SMALL = {"model.g_ch": 8, "model.d_ch": 8, "model.z_dim": 16, "eval.protocol": "custom",
         "eval.num_fake": 64, "eval.num_real": 256, "eval.is_splits": 2,
         "eval.kid_subsets": 2, "eval.batch_size": 32}
SCORE_FIELDS = ("is_mean", "is_std", "fid", "kid_mean", "kid_std", "accuracy", "intra_fid",
                "precision", "recall", "density", "coverage")


def generator_for(cfg, replicator, seed: int):
    import keras

    keras.utils.set_random_seed(seed)
    with replicator.context():
        return models.build_generator(cfg.model)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    cfg = preset("fashion_mnist", SMALL)
    evaluator = Evaluator(cfg, cache_dir=str(tmp_path_factory.mktemp("cache")))
    return cfg, evaluator, replication.make_replicator("default")


def test_scores_depend_on_the_weights_and_the_evaluation_seed_only(small):
    cfg, evaluator, replicator = small
    g = generator_for(cfg, replicator, 0)
    a = evaluator.score(g, replicator, step=3, images_seen=48)
    b = evaluator.score(g, replicator, step=3, images_seen=48)
    for field in SCORE_FIELDS:
        assert getattr(a, field) == getattr(b, field), field
    assert (a.step, a.images_seen, a.n_fake, a.n_real) == (3, 48, 64, 256)
    assert a.protocol.seed == cfg.eval.seed and a.protocol.n_fake == 64
    other = evaluator.score(g, replicator, eval_seed=cfg.eval.seed + 1)
    assert other.protocol.seed == cfg.eval.seed + 1
    assert other.is_mean != a.is_mean and other.fid != a.fid
    assert evaluator.cfg.eval.seed == cfg.eval.seed  # the run's protocol is unchanged
    different = evaluator.score(generator_for(cfg, replicator, 1), replicator)
    assert different.fid != a.fid


def test_one_twin_samples_every_generator_with_its_current_weights(small):
    cfg, evaluator, replicator = small
    first, second = (generator_for(cfg, replicator, s) for s in (0, 1))
    sampler = evaluator.sampler_for(first, replicator)
    assert evaluator.sampler_for(second, replicator) is sampler  # traced once, reused
    for mine, twin in zip(second.weights, sampler.generator.weights, strict=True):
        np.testing.assert_array_equal(mine.numpy(), twin.numpy())
    direct = Sampler(second, replicator, cfg.model.z_dim, cfg.model.num_classes)
    np.testing.assert_allclose(sampler.sample(16, seed=5, batch_size=16),
                               direct.sample(16, seed=5, batch_size=16), atol=1e-6)
    # a different replicator gets its own twin
    two = replication.make_replicator("cpu:2")
    assert evaluator.sampler_for(second, two) is not sampler


@pytest.mark.slow  # 5,000 samples and the 10,000-image reference features
def test_a_committed_generator_scores_as_its_record_says(tmp_path):
    run = os.path.join(REFERENCE, "bs0064_seed0")
    record, replicator = records.read_record(run), replication.make_replicator("default")
    loaded = trained_generator.load_generator(run, replicator)  # checksum checked
    scores = Evaluator(loaded.config, cache_dir=str(tmp_path)).score(
        loaded.sampler.generator, replicator, step=record.steps, images_seen=record.images_seen)
    final = record.final
    assert (scores.n_fake, scores.n_real) == (final.n_fake, final.n_real) == (5000, 10000)
    for field in SCORE_FIELDS:
        assert getattr(scores, field) == pytest.approx(getattr(final, field), rel=1e-4,
                                                       abs=1e-6), field
