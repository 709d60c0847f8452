"""cross_replica_batch_norm: its hand-written gradient against autodiff, and 4 replicas against
one device holding the global batch."""
import numpy as np
import pytest
import tensorflow as tf

import replication

EPS = 1e-3
RNG = np.random.default_rng(11)
REPLICAS, ROWS = 4, 3
# Replica k's shard is scaled and shifted by k: one shard's statistics are far from the global.
SHIFT = np.repeat(np.arange(REPLICAS, dtype=np.float64), ROWS)[:, None, None, None]
GLOBAL = RNG.normal(size=(REPLICAS * ROWS, 3, 2, 5)) * (1 + SHIFT) + 3 * SHIFT
SCALE = 1 + 0.5 * RNG.normal(size=(REPLICAS * ROWS, 5))
OFFSET = RNG.normal(size=(REPLICAS * ROWS, 5))
COEF = RNG.normal(size=GLOBAL.shape)  # d loss / d output


def _textbook(x, scale, offset, cross_replica=True):
    """Batch norm from tf.nn.moments, for TensorFlow's autodiff to differentiate."""
    mean, var = tf.nn.moments(x, list(range(x.shape.rank - 1)))
    rows = [-1] + [1] * (x.shape.rank - 2) + [x.shape[-1]]
    y = (x - mean) / tf.sqrt(var + EPS) * tf.reshape(scale, rows) + tf.reshape(offset, rows)
    return y, mean, var


def _ours_forward(x, scale, offset, cross_replica=True):
    return replication.cross_replica_batch_norm(x, scale, offset, EPS, cross_replica)


def _outputs_and_gradients(batch_norm, x, scale, offset, cross_replica=True):
    """[y, mean, var, d loss/dx, d loss/d scale, d loss/d offset] for loss = sum(y * COEF)."""
    x, scale, offset = (tf.constant(a) for a in (x, scale, offset))
    with tf.GradientTape() as tape:
        tape.watch([x, scale, offset])
        y, mean, var = batch_norm(x, scale, offset, cross_replica)
        loss = tf.reduce_sum(y * COEF.reshape(-1)[:tf.size(y)].reshape(y.shape))
    return [y, mean, var] + tape.gradient(loss, [x, scale, offset])


def _autodiff_reference(x, scale, offset):
    return _outputs_and_gradients(_textbook, x, scale, offset)


def _ours(x, scale, offset, cross_replica=True):
    return _outputs_and_gradients(_ours_forward, x, scale, offset, cross_replica)


@pytest.mark.parametrize("case", ["per_example_rows", "one_row", "rank2"])
def test_gradient_matches_autodiff_of_textbook_batch_norm(case):
    x, scale, offset = GLOBAL, SCALE, OFFSET
    if case == "one_row":
        scale, offset = SCALE[:1], OFFSET[:1]
    if case == "rank2":
        x = GLOBAL.reshape(-1, 5)[:40]
        scale, offset = SCALE[:1], OFFSET[:1]
    names = ["y", "mean", "var", "dx", "dscale", "doffset"]
    for name, got, ref in zip(names, _ours(x, scale, offset), _autodiff_reference(x, scale,
                                                                                  offset)):
        assert got.shape == ref.shape, name
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9, err_msg=name)


def test_float32_stays_close_to_float64():
    got = _ours(*(a.astype(np.float32) for a in (GLOBAL, SCALE, OFFSET)))
    ref = _ours(GLOBAL, SCALE, OFFSET)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


def test_four_replicas_equal_one_device_on_the_global_batch(replicator):
    repl = replicator("cpu:4")
    f32 = [a.astype(np.float32) for a in (GLOBAL, SCALE, OFFSET, COEF)]

    def split(a):
        return repl.distribute_values(
            lambda r: tf.constant(a.reshape(REPLICAS, ROWS, *a.shape[1:])[r]))

    def step_fn(x, scale, offset, coef, cross_replica):
        with tf.GradientTape() as tape:
            tape.watch([x, scale, offset])
            y, mean, var = replication.cross_replica_batch_norm(x, scale, offset, EPS,
                                                                cross_replica)
            loss = tf.reduce_sum(y * coef)  # each replica's share of one global loss
        return [y, mean, var] + tape.gradient(loss, [x, scale, offset])

    def run(cross_replica):
        out = tf.function(lambda *v: repl.run(step_fn, *v, cross_replica=cross_replica))(
            *(split(a) for a in f32))
        return [repl.local_results(t) for t in out]

    ref = _ours(GLOBAL, SCALE, OFFSET)
    y, mean, var, dx, dscale, doffset = run(True)
    for name, got, want in (("y", y, ref[0]), ("dx", dx, ref[3]), ("dscale", dscale, ref[4]),
                            ("doffset", doffset, ref[5])):
        np.testing.assert_allclose(np.concatenate(got), want, rtol=1e-4, atol=1e-4,
                                   err_msg=name)
    for m, v in zip(mean, var):  # every replica holds the global moments
        np.testing.assert_allclose(m, ref[1], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(v, ref[2], rtol=1e-5, atol=1e-5)

    # cross_replica=False: each replica is a batch of its own.
    y_local, mean_local = run(False)[:2]
    for r in range(REPLICAS):
        rows = slice(r * ROWS, (r + 1) * ROWS)
        shard = _ours(GLOBAL[rows], SCALE[rows], OFFSET[rows])
        np.testing.assert_allclose(y_local[r], shard[0], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(mean_local[r], shard[1], rtol=1e-5, atol=1e-5)
    assert np.abs(np.concatenate(y_local) - ref[0]).max() > 0.5  # the two modes differ


def test_rejects_unknown_rank_and_bad_rows():
    with pytest.raises(ValueError, match="rank"):
        replication.cross_replica_batch_norm(tf.ones([3]), tf.ones([1, 3]), tf.ones([1, 3]),
                                             EPS)
    with pytest.raises(ValueError, match="rows"):
        replication.cross_replica_batch_norm(tf.ones([2, 3]), tf.ones([3]), tf.ones([1, 3]),
                                             EPS)
