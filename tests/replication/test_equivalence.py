"""Data parallelism is exact: 1, 2 and 4 replicas train a batch-norm model to the same weights.

Five SGD-with-momentum steps on the same global batches from the same initial weights
(replication/equivalence.py, which `python -m experiments selfcheck` runs on a user's
devices). With synchronised batch norm and losses divided by the global batch (the optimizer
sums gradients over replicas) every replica count must end with the same batch-norm
statistics, losses, gradients and weights, to float32 round-off. Two negative controls show the
comparison can fail: per-replica batch norm, and losses divided by the per-replica batch.
"""
import numpy as np
import pytest
import tensorflow as tf

from replication import equivalence
from replication.equivalence import ATOL, NAMES, RTOL

QUANTITIES = ("batch-norm statistics", "losses", "gradients", "updated weights")


@pytest.fixture(scope="module")
def one_replica(replicator):
    # cpu:1, not "default": on a GPU machine "default" runs on the GPU (TF32 matmuls).
    return equivalence.train(replicator("cpu:1"), synchronized=True)


def max_difference(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a["weights"], b["weights"]))


@pytest.mark.parametrize("spec", ["default", "cpu:2", "cpu:4"])
def test_synchronised_bn_matches_one_replica(replicator, one_replica, spec):
    if spec == "default" and tf.config.list_physical_devices("GPU"):
        pytest.skip("'default' runs on the GPU here; compared with CPU runs only on CPU machines")
    run = equivalence.train(replicator(spec), synchronized=True)
    for name, got, ref in zip(NAMES, run["weights"], one_replica["weights"]):
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=f"{spec}: {name}")
    for name, copies in zip(NAMES, run["replica_copies"]):  # every replica holds the same copy
        for copy in copies[1:]:
            np.testing.assert_array_equal(copy, copies[0], err_msg=f"{spec}: {name}")
    np.testing.assert_allclose(run["losses"], one_replica["losses"], rtol=RTOL)
    assert run["iterations"] == one_replica["iterations"] == equivalence.STEPS
    assert np.abs(one_replica["weights"][3]).max() > 0.1  # the moving mean did move
    gaps = equivalence.compare(run, one_replica)  # what the self-check reports
    assert tuple(gaps) == QUANTITIES and all(g.ok for g in gaps.values()), gaps
    assert max(g.excess for g in gaps.values()) < 0.5  # not a near miss either


def test_the_gradients_are_the_global_batch_mean_and_the_first_update_is_lr_times_them(
        one_replica):
    """The gradients compare() checks are the ones applied: SGD's first step (momentum still
    0) moves each trainable weight by -0.1 x its gradient."""
    x, y = equivalence.make_data()
    w = equivalence.initial_weights()
    h = x[:equivalence.GLOBAL_BATCH] @ w[0]
    mean, var = h.mean(0), h.var(0)
    hn = np.maximum(w[1] * (h - mean) / np.sqrt(var + 1e-3) + w[2], 0)
    residual = (hn @ w[5])[:, 0] + w[6][0] - y[:equivalence.GLOBAL_BATCH]
    head_bias_grad = 2 * residual.mean()  # d/db of the mean squared error
    np.testing.assert_allclose(one_replica["gradients"][-1], [head_bias_grad], rtol=1e-4)
    np.testing.assert_allclose(one_replica["losses"][0], (residual ** 2).mean(), rtol=1e-4)


@pytest.mark.parametrize("spec", ["cpu:2", "cpu:4"])
def test_unsynchronised_bn_is_detected(replicator, one_replica, spec):
    run = equivalence.train(replicator(spec), synchronized=False)
    assert max_difference(run, one_replica) > 100 * ATOL
    # ... and its moving statistics silently differ between replicas.
    moving_variance = run["replica_copies"][4]
    assert np.abs(moving_variance[1] - moving_variance[0]).max() > 100 * ATOL
    gaps = equivalence.compare(run, one_replica)
    assert not gaps["batch-norm statistics"].ok and not gaps["updated weights"].ok, gaps
    assert gaps["batch-norm statistics"].excess > 100


def test_loss_scaled_by_the_per_replica_batch_is_detected(replicator, one_replica):
    repl = replicator("cpu:2")
    run = equivalence.train(repl, synchronized=True,
                            loss_divisor=repl.per_replica_batch(equivalence.GLOBAL_BATCH))
    assert max_difference(run, one_replica) > 100 * ATOL
    gaps = equivalence.compare(run, one_replica)
    # the losses and gradients are doubled: every gradient-driven quantity is far off
    assert gaps["gradients"].excess > 100 and gaps["losses"].excess > 100, gaps
    assert not gaps["updated weights"].ok
    np.testing.assert_allclose(run["gradients"][-1], 2 * one_replica["gradients"][-1],
                               rtol=1e-4)


def test_reference_spec_is_one_device_of_the_same_kind(replicator):
    assert equivalence.reference_spec(replicator("cpu:2")) == "cpu:1"
