"""In-step collectives on 4 replicas holding different data, against numpy on the global batch."""
import numpy as np
import pytest
import tensorflow as tf

import replication

REPLICAS, ROWS = 4, 3  # rows per replica
RNG = np.random.default_rng(0)
# Different scale and offset per replica, so a collective that looked at one shard would fail.
SCALE = np.repeat(np.arange(1.0, 5.0), ROWS)[:, None, None, None]
OFFSET = np.repeat(np.arange(4) * 3.0, ROWS)[:, None, None, None]
GLOBAL = (RNG.normal(size=(REPLICAS * ROWS, 2, 2, 5)) * SCALE + OFFSET).astype(np.float32)
COEF = RNG.normal(size=GLOBAL.shape).astype(np.float32)  # d loss / d normalised output
EPS = 1e-3


def shards(a):
    return a.reshape(REPLICAS, ROWS, *a.shape[1:])


def step_fn(x, coef):
    """Everything a step may ask of its peers, plus the gradient through global batch norm."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        mean, var = replication.cross_replica_moments(x, axes=[0, 1, 2])
        normalised = (x - mean) / tf.sqrt(var + EPS)
        loss = tf.reduce_sum(normalised * coef)
    return {
        "sum": replication.all_reduce(x, "sum"),
        "mean": replication.all_reduce(x, "mean"),
        "max": replication.all_reduce(x, "max"),
        "min": replication.all_reduce(x, "min"),
        "nest": replication.all_reduce({"a": x[0, 0, 0], "b": [tf.reduce_sum(x)]}, "sum"),
        "gather0": replication.all_gather(x, axis=0),
        "gather2": replication.all_gather(x, axis=2),
        "gather_scalar": replication.all_gather(tf.reduce_sum(x)),
        "replica_id": replication.replica_id(),
        "replicas": tf.constant(replication.num_replicas_in_sync()),
        "moments": (mean, var),
        "moments_keepdims": replication.cross_replica_moments(x, axes=(0, -1), keepdims=True),
        "grad": tape.gradient(loss, x),
        "avg_loss": replication.average_loss(tf.reduce_sum(x, axis=[1, 2, 3]), REPLICAS * ROWS),
        "reg": replication.scale_regularization_loss(tf.constant(6.0)),
    }


@pytest.fixture(scope="module")
def results(replicator):
    """Per-replica results (a tuple over replicas) of one traced step on cpu:4."""
    repl = replicator("cpu:4")
    x = repl.distribute_values(lambda r: tf.constant(shards(GLOBAL)[r]))
    coef = repl.distribute_values(lambda r: tf.constant(shards(COEF)[r]))
    out = tf.function(lambda x, c: repl.run(step_fn, x, c))(x, coef)
    return repl.local_results(out), repl


def per_replica(results, key):
    return [np.asarray(tf.nest.map_structure(np.asarray, r[key])) for r in results[0]]


def test_sum_mean_max_min_match_numpy_over_replicas(results):
    s = shards(GLOBAL)
    for key, ref in [("sum", s.sum(0)), ("mean", s.mean(0)), ("max", s.max(0)), ("min", s.min(0))]:
        for got in per_replica(results, key):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, err_msg=key)


def test_all_reduce_of_a_nest(results):
    s = shards(GLOBAL)
    for r in results[0]:
        np.testing.assert_allclose(r["nest"]["a"], s[:, 0, 0, 0].sum(0), rtol=1e-5)
        np.testing.assert_allclose(r["nest"]["b"][0], GLOBAL.sum(), rtol=1e-4)


def test_all_gather_concatenates_in_replica_order(results):
    by_axis2 = np.concatenate(list(shards(GLOBAL)), axis=2)
    scalars = shards(GLOBAL).reshape(REPLICAS, -1).sum(1)
    for r in results[0]:
        np.testing.assert_array_equal(r["gather0"], GLOBAL)
        np.testing.assert_array_equal(r["gather2"], by_axis2)
        np.testing.assert_allclose(r["gather_scalar"], scalars, rtol=1e-5)


def test_replica_id_and_count(results):
    assert [int(r["replica_id"]) for r in results[0]] == [0, 1, 2, 3]
    assert all(int(r["replicas"]) == REPLICAS for r in results[0])
    assert results[1].num_replicas == REPLICAS


def test_cross_replica_moments_are_the_global_batch_moments(results):
    for r in results[0]:
        mean, var = r["moments"]
        np.testing.assert_allclose(mean, GLOBAL.mean(axis=(0, 1, 2)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(var, GLOBAL.var(axis=(0, 1, 2)), rtol=1e-4, atol=1e-4)
        mean_k, var_k = r["moments_keepdims"]
        assert mean_k.shape == (1, 2, 2, 1)
        np.testing.assert_allclose(mean_k, GLOBAL.mean(axis=(0, 3), keepdims=True),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(var_k, GLOBAL.var(axis=(0, 3), keepdims=True),
                                   rtol=1e-4, atol=1e-4)
    # A single shard's moments are far from the global ones: the check above has teeth.
    assert np.abs(shards(GLOBAL)[0].var(axis=(0, 1, 2)) - GLOBAL.var(axis=(0, 1, 2))).max() > 1.0


def test_gradient_through_moments_is_global_batch_norm_gradient(results):
    """Each replica's gradient = d(sum of all replicas' losses)/d(its shard), as one device."""
    axes = (0, 1, 2)
    mu, sigma = GLOBAL.mean(axes), np.sqrt(GLOBAL.var(axes) + EPS)
    y = (GLOBAL - mu) / sigma
    ref = (COEF - COEF.mean(axes) - y * (COEF * y).mean(axes)) / sigma  # batch-norm backward
    got = np.concatenate(per_replica(results, "grad"))
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-4)


def test_average_loss_sums_to_the_global_mean(results):
    total = sum(float(r["avg_loss"]) for r in results[0])
    np.testing.assert_allclose(total, GLOBAL.sum(axis=(1, 2, 3)).mean(), rtol=1e-5)
    np.testing.assert_allclose(sum(float(r["reg"]) for r in results[0]), 6.0, rtol=1e-6)


def test_collectives_are_identities_with_one_replica(replicator):
    repl = replicator("default")
    x = tf.constant(GLOBAL[:ROWS])
    out = repl.run(lambda x: (replication.all_reduce(x, "max"), replication.all_gather(x, 1),
                              replication.cross_replica_moments(x, [0, 1, 2]),
                              replication.replica_id()), x)
    np.testing.assert_array_equal(out[0], GLOBAL[:ROWS])
    np.testing.assert_array_equal(out[1], GLOBAL[:ROWS])
    np.testing.assert_allclose(out[2][1], GLOBAL[:ROWS].var(axis=(0, 1, 2)), rtol=1e-4)
    assert int(out[3]) == 0


def test_unknown_op_and_cross_replica_context_are_rejected(replicator):
    with pytest.raises(ValueError, match="'prod'"):
        replicator("default").run(lambda: replication.all_reduce(tf.ones(2), "prod"))
    with replicator("cpu:2").context(), pytest.raises(RuntimeError, match="inside a replica step"):
        replication.all_reduce(tf.ones(2))
    with pytest.raises(ValueError, match="out of range"):
        replicator("default").run(lambda: replication.cross_replica_moments(tf.ones(2), [3]))
