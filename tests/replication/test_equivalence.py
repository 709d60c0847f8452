"""Data parallelism is exact: 1, 2 and 4 replicas train a batch-norm model to the same weights.

Five SGD-with-momentum steps on the same global batches from the same initial weights. With
synchronised batch norm and losses divided by the global batch (the optimizer sums gradients
over replicas) every replica count must end with the same weights and moving statistics, to
float32 round-off. Two negative controls show the comparison can fail: per-replica batch
norm, and losses divided by the per-replica batch.
"""
import numpy as np
import pytest
import tensorflow as tf
import tiny_training

ATOL = RTOL = 2e-5
NAMES = ["dense kernel", "bn gamma", "bn beta", "bn moving_mean", "bn moving_variance",
         "head kernel", "head bias"]


@pytest.fixture(scope="module")
def one_replica(replicator):
    # cpu:1, not "default": on a GPU machine "default" runs on the GPU (TF32 matmuls).
    return tiny_training.train(replicator("cpu:1"), synchronized=True)


def max_difference(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a["weights"], b["weights"]))


@pytest.mark.parametrize("spec", ["default", "cpu:2", "cpu:4"])
def test_synchronised_bn_matches_one_replica(replicator, one_replica, spec):
    if spec == "default" and tf.config.list_physical_devices("GPU"):
        pytest.skip("'default' runs on the GPU here; compared with CPU runs only on CPU machines")
    run = tiny_training.train(replicator(spec), synchronized=True)
    for name, got, ref in zip(NAMES, run["weights"], one_replica["weights"]):
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"{spec}: {name}")
    for name, copies in zip(NAMES, run["replica_copies"]):  # every replica holds the same copy
        for copy in copies[1:]:
            np.testing.assert_array_equal(copy, copies[0], err_msg=f"{spec}: {name}")
    np.testing.assert_allclose(run["losses"], one_replica["losses"], rtol=RTOL)
    assert run["iterations"] == one_replica["iterations"] == tiny_training.STEPS
    assert np.abs(one_replica["weights"][3]).max() > 0.1  # the moving mean did move


@pytest.mark.parametrize("spec", ["cpu:2", "cpu:4"])
def test_unsynchronised_bn_is_detected(replicator, one_replica, spec):
    run = tiny_training.train(replicator(spec), synchronized=False)
    assert max_difference(run, one_replica) > 100 * ATOL
    # ... and its moving statistics silently differ between replicas.
    moving_variance = run["replica_copies"][4]
    assert np.abs(moving_variance[1] - moving_variance[0]).max() > 100 * ATOL


def test_loss_scaled_by_the_per_replica_batch_is_detected(replicator, one_replica):
    repl = replicator("cpu:2")
    run = tiny_training.train(repl, synchronized=True,
                              loss_divisor=repl.per_replica_batch(tiny_training.GLOBAL_BATCH))
    assert max_difference(run, one_replica) > 100 * ATOL
