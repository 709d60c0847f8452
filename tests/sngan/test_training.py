"""The trainer: resume equals uninterrupted, divergence recorded, checkpoints, summaries."""
import os

import numpy as np
import pytest
import tensorflow as tf
from model_configs import ModelCfg, TrainCfg
from synthetic_data import synthetic_input_fn

import replication
from sngan.training import GANTrainer


class Tiny:
    """A tiny model and training config (the sngan tests do not use the study's configs)."""

    def __init__(self, **train):
        self.model, self.train = ModelCfg(), TrainCfg(**train)


def tiny_cfg(**train):
    return Tiny(**{k.removeprefix("train__"): v for k, v in train.items()})


def make(tmp_path, cfg, spec="default", name="run", poison=False):
    repl = replication.make_replicator(spec)
    return GANTrainer(cfg.model, cfg.train, repl,
                      synthetic_input_fn(cfg.train.global_batch_size, poison=poison),
                      str(tmp_path / name))


def weights(trainer):
    return {v.path: v.numpy() for m in (trainer.generator, trainer.discriminator)
            for v in m.weights} | {
        f"opt/{i}": v.numpy() for i, v in enumerate(trainer.d_opt.optimizer.variables)}


def test_resume_equals_uninterrupted(tmp_path):
    cfg = tiny_cfg()
    full = make(tmp_path, cfg, name="full")
    full.fit()
    part = make(tmp_path, cfg, name="part")
    part.fit(until=2)  # "killed" after the step-2 checkpoint
    del part
    resumed = make(tmp_path, cfg, name="part")
    assert resumed.restored_step == 2
    result = resumed.fit()
    assert result.steps == 4
    a, b = weights(full), weights(resumed)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # SN u vectors are part of the restored state
    assert any("/u" in k or k.endswith("u") for k in a)


def test_divergence_is_recorded_and_checkpoint_kept(tmp_path):
    cfg = tiny_cfg()
    trainer = make(tmp_path, cfg, poison=True)
    result = trainer.fit()
    assert result.diverged_at == 1
    assert result.steps == 0
    assert trainer.manager.latest_checkpoint is None  # nothing broken was saved


def test_checkpoints_and_summaries_written(tmp_path):
    cfg = tiny_cfg(train__ema_decay=0.5, train__lr_decay_start=1)
    trainer = make(tmp_path, cfg)
    trainer.fit()
    run = tmp_path / "run"
    assert tf.train.latest_checkpoint(str(run / "checkpoints")).endswith("-4")
    assert any(f.startswith("events") for f in os.listdir(run / "tensorboard"))
    # linear decay from step 1 towards 0 at step 4: the last update (step index 3) used 1/3
    assert trainer.g_opt.optimizer.learning_rate.numpy() == pytest.approx(2e-4 * (1 - 2 / 3))
    # EMA generator differs from the raw one
    ema = trainer.g_ema.trainable_variables[0].numpy()
    raw = trainer.generator.trainable_variables[0].numpy()
    assert not np.allclose(ema, raw)


def test_generator_update_can_draw_a_larger_batch(tmp_path):
    """sngan_projection's n_gen_samples: the G update sees multiplier x the D batch."""
    cfg = tiny_cfg(train__g_batch_multiplier=2, train__steps=1)
    trainer = make(tmp_path, cfg)
    seen = []
    call = trainer.generator.call

    def spy(z, labels=None, training=False):
        seen.append(int(z.shape[0]))
        return call(z, labels, training=training)

    trainer.generator.call = spy
    trainer.fit()
    # D updates draw the batch of 8, the G update twice it (20: the summary's sample grid)
    assert {8, 16} <= set(seen) and set(seen) - {8, 16} == {20}
