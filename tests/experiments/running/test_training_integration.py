"""The trainer inside the study: refused config changes, replica-count independence of
training, sampling and scores, and (slow) real learning on Fashion-MNIST."""
import numpy as np
import pytest
from synthetic_data import synthetic_input_fn

import replication
from experiments import config as c
from experiments.configs import preset
from experiments.running import run_dir
from experiments.running.run_dir import ConfigMismatchError
from sngan.training import GANTrainer

TINY = {"model.g_ch": 8, "model.d_ch": 8, "model.z_dim": 16, "train.global_batch_size": 8,
        "train.n_dis": 2, "train.steps": 4, "train.checkpoint_every": 2,
        "train.log_every": 100, "train.summary_every": 2, "eval.batch_size": 8}


def tiny_cfg(**overrides):
    return preset("fashion_mnist", {**TINY, **{k.replace("__", "."): v
                                                  for k, v in overrides.items()}})


def make(tmp_path, cfg, spec="default", name="run"):
    directory = str(tmp_path / name)
    run_dir.claim(directory, cfg)
    return GANTrainer(cfg.model, cfg.train, replication.make_replicator(spec),
                      synthetic_input_fn(cfg.train.global_batch_size), directory)


def weights(trainer):
    return {v.path: v.numpy() for m in (trainer.generator, trainer.discriminator)
            for v in m.weights} | {
        f"opt/{i}": v.numpy() for i, v in enumerate(trainer.d_opt.optimizer.variables)}


def test_resume_with_changed_config_is_refused(tmp_path):
    cfg = tiny_cfg()
    make(tmp_path, cfg).fit(until=2)
    changed = tiny_cfg(train__n_dis=3)
    with pytest.raises(ConfigMismatchError, match="train.n_dis"):
        make(tmp_path, changed)
    # logging cadence may change without refusal
    make(tmp_path, tiny_cfg(train__log_every=7))
    assert c.RunConfig.from_json((tmp_path / "run" / "config.json").read_text()) \
        == tiny_cfg(train__log_every=7)


@pytest.mark.slow  # traces a 1- and a 4-replica trainer, the classifier and three samplers
def test_training_and_sampling_do_not_depend_on_replica_count(tmp_path):
    cfg = tiny_cfg(train__steps=2)
    one = make(tmp_path, cfg, "default", name="one")
    one.fit()
    cfg4 = tiny_cfg(train__steps=2, train__replicator="cpu:4")
    four = make(tmp_path, cfg4, "cpu:4", name="four")
    four.fit()
    a, b = weights(one), weights(four)
    compared = 0
    for k in a:
        if k.startswith("generator/") and k.endswith("bias") and "final" not in k:
            # These biases feed a batch norm, so their gradient is zero in exact arithmetic:
            # Adam turns the round-off left of it into lr-sized steps on any device count.
            continue
        rel = np.abs(a[k] - b[k]).max() / max(np.abs(a[k]).max(), 1e-3)
        assert rel < 1e-3, (k, rel)
        compared += 1
    assert compared > 40
    s1 = one.sampler.sample(16, seed=3, batch_size=8)
    s4 = four.sampler.sample(16, seed=3, batch_size=8)
    np.testing.assert_allclose(s1, s4, atol=1e-4)
    # ... and so do the scores (shipped classifier, real Fashion-MNIST test images)
    from experiments import data
    from experiments.evaluation import classifiers, scoring
    ev = c.EvalConfig(protocol="custom", num_fake=16, num_real=64, is_splits=2, batch_size=8,
                      kid_subsets=2)
    clf = classifiers.load_classifier(ev)
    _, real = clf.activations(data.fashion_mnist_images("test")[0][:64])
    a1, a4 = (scoring.score_images(x, clf, real, ev) for x in (s1, s4))
    for key in ("is_mean", "fid", "kid_mean"):
        assert a1[key] == pytest.approx(a4[key], rel=1e-4, abs=1e-6), key
    # moving statistics are untouched by sampling in 'batch' and 'standing' modes
    before = [bn.moving_mean.numpy().copy() for bn in one.generator.bn_layers]
    std = one.sampler.sample(16, seed=3, batch_size=8, bn_mode="standing", standing_batches=3)
    mov = one.sampler.sample(16, seed=3, batch_size=8, bn_mode="moving")
    for x, bn in zip(before, one.generator.bn_layers):
        np.testing.assert_array_equal(x, bn.moving_mean.numpy())
    assert np.abs(std - s1).max() > 1e-4 and np.abs(mov - s1).max() > 1e-4



def test_a_diverged_point_is_recorded_never_scored_and_reported(tmp_path, monkeypatch):
    import tensorflow as tf

    from experiments import records
    from experiments.reporting.report import write_report
    from experiments.running import point

    cfg = tiny_cfg(train__checkpoint_every=1, eval__every=0)
    steps_ok = 2  # NaN images from step 3 on

    def poisoned(cfg_):
        return synthetic_input_fn(cfg_.train.global_batch_size,
                                  poison_after=steps_ok * cfg_.train.n_dis)

    class NeverScores:
        def score(self, *args, **kwargs):
            raise AssertionError("a diverged point was scored")

    monkeypatch.setattr(point, "training_input_fn", poisoned)
    run = str(tmp_path / "points" / "bs0008_seed0")
    record = point.run_point(cfg, run, replication.make_replicator("default"), NeverScores())
    assert (record.status, record.diverged_at, record.steps) == ("diverged", 3, 2)
    assert records.read_record(run).replace(last_losses=None) == record.replace(
        last_losses=None)  # (NaN losses never compare equal)
    latest = tf.train.latest_checkpoint(str(tmp_path / "points" / "bs0008_seed0" /
                                            "checkpoints"))
    assert latest.endswith("ckpt-2")  # the last good one, restorable and finite
    for name, _ in tf.train.list_variables(latest):
        value = tf.train.load_variable(latest, name)
        if np.issubdtype(np.asarray(value).dtype, np.floating):
            assert np.all(np.isfinite(value)), name
    rows = write_report(str(tmp_path))["rows"]
    assert rows[0]["diverged"] == 1 and rows[0]["is_mean"] is None


@pytest.mark.long
def test_a_few_hundred_steps_on_fashion_mnist_learn(tmp_path):
    from experiments import data
    cfg = preset("fashion_mnist", {"train.global_batch_size": 32, "train.steps": 300,
                                     "train.n_dis": 1, "train.checkpoint_every": 300,
                                     "train.log_every": 100, "train.summary_every": 300,
                                     "model.g_ch": 16, "model.d_ch": 16})
    repl = replication.make_replicator("default")
    trainer = GANTrainer(cfg.model, cfg.train, repl,
                         lambda skip: data.make_input_fn(cfg.data, 32, "train", seed=0,
                                                         skip_batches=skip),
                         str(tmp_path / "run"))
    x0 = trainer.sampler.sample(64, seed=5, batch_size=64)
    trainer.fit()
    x1 = trainer.sampler.sample(64, seed=5, batch_size=64)
    real, labels = next(iter(data.make_input_fn(cfg.data, 64, "test", seed=1)()))
    d_real = trainer.discriminator(real, labels, training=False).numpy().mean()
    d_fake = trainer.discriminator(x1, np.arange(64) % 10, training=False).numpy().mean()
    assert d_real - d_fake > 0.1, (d_real, d_fake)
    assert np.abs(x1 - x0).mean() > 0.1
    # samples moved towards the data: background pixels (image corners) become dark
    assert x1[:, :2, :2].mean() < x0[:, :2, :2].mean() - 0.1
