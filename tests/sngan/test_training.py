"""The trainer: resume equals uninterrupted (in this process and in a fresh one), damaged
checkpoints fall back, divergence is recorded and never saved, XLA falls back, summaries."""
import logging
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from synthetic_data import synthetic_input_fn
from tiny_configs import tiny_model, tiny_train

import replication
from sngan import equivalence
from sngan.checkpoints import variables_by_name
from sngan.training import GANTrainer


class Tiny:
    """A tiny model and training config (the sngan tests do not use the study's configs)."""

    def __init__(self, **train):
        self.model, self.train = tiny_model(), tiny_train(**train)


def tiny_cfg(**train):
    return Tiny(**{k.removeprefix("train__"): v for k, v in train.items()})


def make(tmp_path, cfg, spec="default", name="run", poison=False, poison_after=None,
         trainer_class=GANTrainer):
    repl = replication.make_replicator(spec)
    return trainer_class(cfg.model, cfg.train, repl,
                         synthetic_input_fn(cfg.train.global_batch_size, poison=poison,
                                            poison_after=poison_after),
                         str(tmp_path / name))


# what a resumed run must get back, with the tolerances `python -m experiments selfcheck` uses
state = equivalence.trainer_state


def assert_same_state(a: dict, b: dict):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=equivalence.STATE_RTOL,
                                   atol=equivalence.STATE_ATOL, err_msg=k)
    assert equivalence.state_gap(a, b)[0] <= 1.0


RESUME_IN_FRESH_PROCESS = """
import os, sys
import numpy as np
sys.path[:0] = [{tests!r}, {root!r}, os.path.join({root!r}, "tests", "support")]
from test_training import EMA, make, state
from pathlib import Path
trainer = make(Path({tmp!r}), EMA, name="part")
assert trainer.restored_step == 2, trainer.restored_step
trainer.fit()
np.savez({out!r}, **state(trainer))
os._exit(0)
"""


# the EMA generator and the learning-rate decay are part of the state
EMA = tiny_cfg(ema_decay=0.5, lr_decay_start=1)


@pytest.fixture(scope="module")
def full(tiny_run):
    """4 uninterrupted steps (checkpoints at 2 and 4): the session's tiny run
    (tests/sngan/conftest.py), shared by the tests that compare. Read it, never train it."""
    assert (tiny_run.model_cfg, tiny_run.cfg) == (EMA.model, EMA.train)
    return tiny_run


@pytest.mark.slow  # starts TensorFlow in a second process and traces three trainers
def test_resume_equals_uninterrupted_here_and_in_a_fresh_process(full, tmp_path):
    expected = state(full)
    assert int(expected["step"]) == 4
    assert any(k.startswith("D|") and k.endswith("/u") for k in expected)  # SN u vectors
    assert any(k.startswith("G_adam|") and "momentum" in k for k in expected)
    part = make(tmp_path, EMA, name="part")
    part.fit(until=2)  # "killed" after the step-2 checkpoint
    del part
    shutil.copytree(tmp_path / "part", tmp_path / "copy")
    # a fresh process: nothing in memory (Keras name counters, tf.function caches) helps
    tests = os.path.dirname(os.path.abspath(__file__))
    code = RESUME_IN_FRESH_PROCESS.format(tests=tests, root=os.path.dirname(os.path.dirname(
        tests)), tmp=str(tmp_path), out=str(tmp_path / "fresh.npz"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(tmp_path / "fresh.npz") as fresh:
        assert_same_state(expected, dict(fresh))
    # and in this process, from a copy of the same checkpoints
    resumed = make(tmp_path, EMA, name="copy")
    assert resumed.restored_step == 2
    assert resumed.fit().steps == 4
    assert_same_state(expected, state(resumed))


def checkpoint_files(run_dir, step):
    d = run_dir / "checkpoints"
    return sorted(d / f for f in os.listdir(d) if f.startswith(f"ckpt-{step}."))


def assert_holds_checkpoint(trainer, prefix):
    """Every variable of `trainer` has the value stored in checkpoint `prefix`."""
    names = dict(generator=trainer.generator.weights, discriminator=trainer.discriminator.weights,
                 generator_ema=trainer.g_ema.weights)
    for group, variables in names.items():
        for key, v in variables_by_name(variables).items():
            escaped = key.replace(".", "..")  # how checkpoint keys escape dots
            stored = tf.train.load_variable(prefix,
                                            f"{group}/{escaped}/.ATTRIBUTES/VARIABLE_VALUE")
            np.testing.assert_array_equal(v.numpy(), stored, err_msg=f"{group}/{key}")
    assert int(trainer.global_step.numpy()) == tf.train.load_variable(
        prefix, "step/.ATTRIBUTES/VARIABLE_VALUE")


def test_public_step_is_one_step_of_fit(full, tmp_path):
    """`step()` (what benchmarks drive) is the loop's unit: 4 calls reach fit()'s state."""
    trainer = make(tmp_path, EMA)
    metrics = trainer.step()
    assert int(trainer.global_step.numpy()) == 1
    assert {"d_loss", "g_loss", "weights_finite"} <= set(metrics)
    assert all(isinstance(v, float) for v in metrics.values())
    assert metrics["weights_finite"] == 1.0
    for _ in range(3):
        trainer.step()
    assert_same_state(state(full), state(trainer))


def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one(full, tmp_path, caplog):
    run = tmp_path / "run"
    shutil.copytree(full.workdir, run)
    equivalence.damage(str(run / "checkpoints" / "ckpt-4"))  # its data truncated
    assert all(f.stat().st_size <= 100 for f in checkpoint_files(run, 4) if ".data-" in f.name)
    with caplog.at_level(logging.WARNING):
        resumed = make(tmp_path, EMA)
    assert resumed.restored_step == 2
    # what `selfcheck --inject-fault checkpoint` relies on: not the state that was written
    assert equivalence.state_gap(state(resumed), state(full))[0] > 1e3
    assert "ckpt-4 does not restore" in caplog.text and "older checkpoint" in caplog.text
    assert_holds_checkpoint(resumed, str(run / "checkpoints" / "ckpt-2"))
    assert resumed.fit().steps == 4  # trains the lost steps again and saves over the damage
    assert resumed.manager.latest_checkpoint.endswith("ckpt-4")
    assert tf.train.load_variable(str(run / "checkpoints" / "ckpt-4"),
                                  "step/.ATTRIBUTES/VARIABLE_VALUE") == 4


def test_no_restorable_checkpoint_starts_from_scratch(full, tmp_path, caplog):
    run = tmp_path / "run"
    shutil.copytree(full.workdir, run)
    for step in (2, 4):
        for f in checkpoint_files(run, step):
            f.write_bytes(b"garbage")
    (run / "checkpoints" / "checkpoint").write_text("not { a checkpoint state")
    fresh = make(tmp_path, EMA, name="fresh")
    with caplog.at_level(logging.WARNING):
        resumed = make(tmp_path, EMA)
    assert resumed.restored_step == 0
    assert "starts from scratch" in caplog.text
    assert_same_state(state(fresh), state(resumed))  # initial values, nothing half-read


def test_divergence_after_a_checkpoint_keeps_the_last_good_one(tmp_path):
    cfg = tiny_cfg(ema_decay=0.5)
    # NaN real images from step 3 on: D's loss becomes NaN at step 3
    trainer = make(tmp_path, cfg, poison_after=2 * cfg.train.n_dis)
    result = trainer.fit()
    assert (result.diverged_at, result.steps) == (3, 2)
    assert trainer.manager.latest_checkpoint.endswith("ckpt-2")  # nothing broken was saved
    restored = make(tmp_path, cfg)
    assert restored.restored_step == 2
    assert all(np.all(np.isfinite(v)) for v in state(restored).values())


def test_non_finite_weights_are_divergence_even_with_finite_losses(tmp_path):
    """A NaN that the losses do not see (here a BN moving variance, unused while training)
    must not be checkpointed or scored either."""
    cfg = tiny_cfg()
    trainer = make(tmp_path, cfg)
    trainer.fit(until=2)
    bn = trainer.generator.bn_layers[0]
    bn.moving_variance.assign(np.full(bn.moving_variance.shape, np.nan, np.float32))
    result = trainer.fit()
    assert (result.diverged_at, result.steps) == (3, 2)
    assert all(np.isfinite(v) for v in result.last_metrics.values())
    assert trainer.manager.latest_checkpoint.endswith("ckpt-2")


def test_divergence_is_recorded_and_checkpoint_kept(tmp_path):
    cfg = tiny_cfg()
    trainer = make(tmp_path, cfg, poison=True)
    result = trainer.fit()
    assert result.diverged_at == 1
    assert result.steps == 0
    assert trainer.manager.latest_checkpoint is None  # nothing broken was saved


class NoXLATrainer(GANTrainer):
    """Its D update holds an op XLA cannot compile (a Python function), as an op unsupported
    on some accelerator would."""

    def _d_replica_step(self, batches, key):
        out = super()._d_replica_step(batches, key)
        out["d_loss"] = tf.numpy_function(lambda x: x, [out["d_loss"]], tf.float32)
        return out


@pytest.mark.long  # compiles the step twice (~1 min here); scripts/test.sh --long runs it
def test_auto_xla_falls_back_without_it_when_compilation_fails(tmp_path, monkeypatch, caplog):
    from sngan import training
    monkeypatch.setattr(training, "XLA_AUTO_DEVICE_KINDS", ("CPU",))  # attempt it here
    with caplog.at_level(logging.WARNING):
        tried = make(tmp_path, tiny_cfg(jit_compile=None, steps=2), name="auto",
                     trainer_class=NoXLATrainer)
        assert tried.jit_compile  # attempted
        tried.fit()
    assert "XLA compilation failed" in caplog.text and "continuing without XLA" in caplog.text
    assert tried.jit_compile is False  # the mode that ran
    plain = make(tmp_path, tiny_cfg(jit_compile=False, steps=2), name="plain",
                 trainer_class=NoXLATrainer)
    plain.fit()
    assert_same_state(state(plain), state(tried))  # the failed attempt changed nothing


def test_auto_xla_is_off_on_cpu(tmp_path):
    assert make(tmp_path, tiny_cfg(jit_compile=None)).jit_compile is False


def test_checkpoints_and_summaries_written(full):
    trainer = full  # ema_decay=0.5, lr_decay_start=1, 4 steps
    run = pathlib.Path(trainer.workdir)
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


class PreemptAt:
    """Stands in for replication.PreemptionWatcher: the workers 'agreed' on step `step`."""

    def __init__(self, step: int, events: list):
        self.step, self.events = step, events

    def after_step(self, save):
        self.events.append("after_step")
        if self.events.count("after_step") == self.step:
            raise replication.Preempted(save())


@pytest.mark.long  # traces three trainers
def test_a_preemption_saves_after_the_steps_evaluation_and_resumes_exactly(full, tmp_path):
    expected = {  # checkpoint_every=2: step 2's periodic checkpoint is not written twice
        3: ["eval 1", "after_step", "save", "eval 2", "after_step", "eval 3", "after_step",
            "save"],
        2: ["eval 1", "after_step", "save", "eval 2", "after_step"]}
    for stop, sequence in expected.items():
        events = []
        part = make(tmp_path, EMA, name=f"part{stop}")
        part.replicator.preemption = PreemptAt(stop, events)
        save = part.save
        part.save = lambda: events.append("save") or save()
        with pytest.raises(replication.Preempted) as err:
            part.fit(eval_callback=lambda trainer, step: events.append(f"eval {step}"))
        assert err.value.step == stop and events == sequence
        assert checkpoint_files(tmp_path / f"part{stop}", stop)
    resumed = make(tmp_path, EMA, name="part3")  # a watcher only where the CLI sets one
    assert resumed.restored_step == 3 and resumed.replicator.preemption is None
    assert resumed.fit().steps == 4
    assert_same_state(state(full), state(resumed))
