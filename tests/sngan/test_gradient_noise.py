"""Squared gradient norms inside replica steps: replicas and slices of one batch agree on the
same data, the estimate does not depend on the replica count beyond its noise, and a trainer
with the feature off (or measuring) trains exactly as one without it."""
import os

import numpy as np
import pytest
import tensorflow as tf
from synthetic_data import synthetic_input_fn
from tiny_configs import tiny_model, tiny_train

import replication
from sngan import gradient_noise, noise_scale
from sngan.training import GANTrainer

D, BATCH, MEASUREMENTS = 10, 32, 150
DELTA = np.full(D, 1.0 / np.sqrt(D), np.float32)  # w - w*: G = delta, |G|^2 = 1
TRUE_B_NOISE = D * 2.0 + 1.0  # tr(Sigma)/|G|^2 with unit noise (see test_noise_scale.py)


def regression_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((MEASUREMENTS * BATCH, D)).astype(np.float32)
    # targets for w* = 0: y = e, so the residual at w = delta is x.delta - e
    y = rng.standard_normal(MEASUREMENTS * BATCH).astype(np.float32)
    return x, y


def regression_norms(repl, x, y):
    """[M, 2] (mean |G_small|^2, |G_big|^2) per global batch, measured by gradient_noise."""
    splits, _ = gradient_noise.plan(repl.num_replicas, 1)
    with repl.context():
        w = tf.Variable(DELTA)

    def input_fn(ctx):
        per_replica = ctx.get_per_replica_batch_size(BATCH)
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(per_replica, drop_remainder=True)

    def replica_step(batch):
        xb, yb = batch
        norms = gradient_noise.UnitNorms(True, splits)
        with norms.tape() as tape:
            per_example = 0.5 * tf.square(tf.linalg.matvec(xb, w) - yb)
            loss = replication.average_loss(per_example, BATCH)
            norms.slice(per_example, BATCH)
        grads = tape.gradient(loss, [w])
        norms.add(tape, [w], grads)
        return norms.result("d", grads)

    @tf.function(autograph=False)
    def step(batch):
        out = repl.reduce(repl.run(replica_step, batch), "sum")
        return tf.stack([out["noise/d_small_sq"], out["noise/d_big_sq"]])

    return np.array([step(b).numpy() for b in repl.distribute(input_fn, BATCH)]), \
        BATCH // (repl.num_replicas * splits)


def numpy_norms(x, y, units: int) -> np.ndarray:
    g = x * (x @ DELTA - y)[:, None]  # per-example gradients
    g = g.reshape(MEASUREMENTS, units, BATCH // units, D)
    small = (g.mean(axis=2) ** 2).sum(-1).mean(-1)
    big = (g.mean(axis=(1, 2)) ** 2).sum(-1)
    return np.stack([small, big], axis=1)


@pytest.fixture(scope="module")
def regression():
    x, y = regression_data()
    return x, y, {spec: regression_norms(replication.make_replicator(spec), x, y)
                  for spec in ("default", "cpu:2", "cpu:4")}


def test_each_replica_count_measures_what_numpy_computes(regression):
    x, y, measured = regression
    for spec, (norms, b_small) in measured.items():
        units = BATCH // b_small
        np.testing.assert_allclose(norms, numpy_norms(x, y, units), rtol=2e-4, err_msg=spec)


def test_two_replicas_and_two_slices_of_one_batch_agree_on_the_same_data(regression):
    _, _, measured = regression
    (one, b1), (two, b2) = measured["default"], measured["cpu:2"]
    assert b1 == b2 == BATCH // 2
    np.testing.assert_allclose(one, two, rtol=2e-4)


def test_the_estimate_does_not_depend_on_the_replica_count_beyond_its_noise(regression):
    """Per replica count: mean tr(Sigma) and |G|^2 over 150 batches vs the closed form, within
    4 standard errors of the measurements themselves (B_small 16, 16 and 8 of 32)."""
    _, _, measured = regression
    for spec, (norms, b_small) in measured.items():
        terms = np.array([noise_scale.unbiased_terms(s, b, b_small, BATCH) for s, b in norms])
        mean, se = terms.mean(0), terms.std(0, ddof=1) / np.sqrt(len(terms))
        assert abs(mean[0] - 1.0) < 4 * se[0], (spec, mean, se)
        assert abs(mean[1] - TRUE_B_NOISE) < 4 * se[1], (spec, mean, se)
        assert se[1] < 0.2 * TRUE_B_NOISE  # the check has teeth


# -- the trainer ---------------------------------------------------------------------------
def train(tmp_path, name, spec="default", cfg=None):
    cfg = cfg or tiny_train()
    trainer = GANTrainer(tiny_model(), cfg, replication.make_replicator(spec),
                         synthetic_input_fn(cfg.global_batch_size), str(tmp_path / name))
    trainer.fit()
    return trainer


def weights(trainer) -> list[np.ndarray]:
    return [v.numpy() for m in (trainer.generator, trainer.discriminator) for v in m.weights] \
        + [v.numpy() for v in trainer.g_opt.variables + trainer.d_opt.variables]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("noise")
    return dict(without=train(tmp, "without"),
                off=train(tmp, "off", cfg=tiny_train(noise_scale_every=0)),
                every1=train(tmp, "every1", cfg=tiny_train(noise_scale_every=1)),
                replicas=train(tmp, "replicas", "cpu:2", tiny_train(noise_scale_every=1)))


@pytest.mark.long  # four tiny trainings, one on 2 replicas
def test_off_is_bit_identical_to_a_trainer_without_the_feature(runs):
    assert runs["off"].noise_scale is None
    for a, b in zip(weights(runs["without"]), weights(runs["off"]), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.long
def test_measuring_every_step_applies_the_same_updates(runs):
    """The slices' gradients come from the update's own forward pass and the update applies
    the full gradient as usual, so measuring does not steer training."""
    for a, b in zip(weights(runs["without"]), weights(runs["every1"]), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.long
def test_trainer_measures_both_players_every_step(runs, tmp_path):
    tracker = runs["every1"].noise_scale
    assert tracker.source.startswith("2 slices")
    assert tracker.batches == {"d": (4, 8), "g": (4, 8)}
    for player in ("d", "g"):
        s = tracker.series[player]
        assert s.steps == [1, 2, 3, 4]
        assert all(np.isfinite(s.g2)) and all(np.isfinite(s.trace))
    events = tf.compat.v1.train.summary_iterator
    run_dir = os.path.join(runs["every1"].workdir, "tensorboard")
    tags = {v.tag for f in os.listdir(run_dir) for e in events(os.path.join(run_dir, f))
            for v in e.summary.value}
    assert {"noise_scale/b_simple_d", "noise_scale/b_simple_g"} <= tags


@pytest.mark.long
def test_two_replicas_measure_what_two_slices_measure_for_the_discriminator(runs):
    """Same data, same latents: D (no batch norm) gets the same small and big norms. G's
    cross-replica BN couples the replicas' backward passes, so only its big gradient (the
    global one) must agree; its per-replica parts are not the slices' gradients."""
    one, two = runs["every1"].noise_scale, runs["replicas"].noise_scale
    assert two.source.startswith("replicas") and two.batches == one.batches
    np.testing.assert_allclose(two.series["d"].g2, one.series["d"].g2, rtol=1e-3, atol=1e-7)
    np.testing.assert_allclose(two.series["d"].trace, one.series["d"].trace, rtol=1e-3,
                               atol=1e-7)

    def big_sq(series):  # the estimates are exact in the norms: |G|^2 + tr(Sigma)/B_big
        return np.array(series.g2) + np.array(series.trace) / 8

    np.testing.assert_allclose(big_sq(two.series["g"]), big_sq(one.series["g"]), rtol=1e-3)


def test_a_batch_that_does_not_split_is_refused():
    with pytest.raises(ValueError, match="divisible"):
        gradient_noise.tracker_for(1, num_replicas=1, accumulation=1, global_batch=7)
    assert gradient_noise.tracker_for(0, 1, 1, 7) == (None, 1)
    tracker, splits = gradient_noise.tracker_for(5, 2, 2, 16, g_batch_multiplier=2)
    assert splits == 1 and tracker.batches == {"d": (4, 16), "g": (8, 32)}
