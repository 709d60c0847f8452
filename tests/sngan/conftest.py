"""Shared fixtures for the model-library tests."""
import keras
import pytest
from synthetic_data import synthetic_input_fn
from tiny_configs import TINY_RUN_TRAIN, tiny_model

from replication import make_replicator


@pytest.fixture
def keras_seed0():
    """Keras initialisers draw from its global seed: fix it so every run sees the same weights."""
    keras.utils.set_random_seed(0)


@pytest.fixture(scope="session")
def strategy4():
    """ONE 4-replica MirroredStrategy (make_replicator("cpu:4")) for the whole session.

    Two MirroredStrategy objects over the same devices in one process allocate the same
    collective group/instance keys; the second one's all-reduce of a different shape then
    fails with "Shape mismatch in the collective instance 100" and aborts collectives for
    the rest of the process. So the tests share one.
    """
    return make_replicator("cpu:4").strategy


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """ONE tiny trained run for the session: a GANTrainer (tiny_model(), TINY_RUN_TRAIN,
    synthetic data) after 4 uninterrupted steps, checkpoints at 2 and 4 in its workdir.

    Tracing a trainer's step costs far more than its steps, so the tests that only read a
    trained run share this one; they must not train it further nor write into its workdir
    (copy the workdir first).
    """
    from sngan.training import GANTrainer
    trainer = GANTrainer(tiny_model(), TINY_RUN_TRAIN, make_replicator("default"),
                         synthetic_input_fn(TINY_RUN_TRAIN.global_batch_size),
                         str(tmp_path_factory.mktemp("tiny_run")))
    result = trainer.fit()
    assert (result.steps, result.diverged_at) == (TINY_RUN_TRAIN.steps, None)
    return trainer
