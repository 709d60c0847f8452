"""Per-replica random streams: the global sample does not depend on the replica count."""
import numpy as np
import pytest
import tensorflow as tf

import replication

SEED, GLOBAL_BATCH, DIM, CLASSES = 7, 8, 3, 10


def draw(seed, step, stream=0):
    return (replication.replica_normal(seed, step, [GLOBAL_BATCH, DIM], stream=stream),
            replication.replica_uniform_int(seed, step, GLOBAL_BATCH, CLASSES, stream=stream))


@pytest.fixture(scope="module")
def gathered(replicator):
    """Global samples assembled from the replicas' slices, for 1, 2 and 4 replicas."""
    out = {}
    for spec in ("default", "cpu:2", "cpu:4"):
        repl = replicator(spec)
        step = tf.function(lambda s, k: repl.gather(repl.run(draw, SEED, s, k), axis=0))
        out[spec] = [tuple(np.asarray(t) for t in step(tf.constant(s, tf.int64), tf.constant(k)))
                     for s, k in [(0, 0), (1, 0), (0, 1)]]
    return out


def test_every_replica_count_sees_the_same_global_sample(gathered):
    for s, k, draws in zip([0, 1, 0], [0, 0, 1], gathered["default"]):
        z, labels = replication.global_normal(SEED, s, [GLOBAL_BATCH, DIM], stream=k), \
            replication.global_uniform_int(SEED, s, GLOBAL_BATCH, CLASSES, stream=k)
        np.testing.assert_array_equal(draws[0], z)
        np.testing.assert_array_equal(draws[1], labels)
    for spec in ("cpu:2", "cpu:4"):  # "default" may be a GPU: Philox bits agree, floats to ulps
        for ref, got in zip(gathered["default"], gathered[spec]):
            np.testing.assert_allclose(got[0], ref[0], rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(got[1], ref[1])
        for ref, got in zip(gathered["cpu:2"], gathered[spec]):
            np.testing.assert_array_equal(got[0], ref[0])


def test_replicas_get_different_rows_and_steps_and_streams_differ(gathered):
    (z00, y00), (z10, _), (z01, _) = gathered["cpu:4"]
    slices = z00.reshape(4, 2, DIM)
    assert all(not np.allclose(slices[i], slices[j]) for i in range(4) for j in range(i))
    assert not np.allclose(z00, z10) and not np.allclose(z00, z01)
    assert y00.dtype == np.int32 and y00.min() >= 0 and y00.max() < CLASSES


def test_draws_are_reproducible_and_standard_normal():
    a = replication.global_normal(3, tf.Variable(5, dtype=tf.int64), [4000])
    b = replication.global_normal(3, 5, [4000])
    np.testing.assert_array_equal(a, b)  # a restored step counter redraws the same numbers
    assert abs(float(np.mean(a))) < 0.06 and abs(float(np.std(a)) - 1) < 0.05
    counts = np.bincount(replication.global_uniform_int(3, 5, 5000, 5).numpy(), minlength=5)
    assert counts.min() > 900  # roughly uniform over the 5 classes


def test_global_batch_not_divisible_by_replicas_is_rejected(replicator):
    repl = replicator("cpu:4")
    with pytest.raises(ValueError, match="global batch 6 is not divisible by 4"):
        tf.function(lambda: repl.run(lambda: replication.replica_normal(0, 0, [6, 2])))()
