"""Restoring the newest checkpoint that loads: order by step, files found without the index,
a damaged newest one falls back to an older one, none restorable leaves the start values."""
import logging
import os

import numpy as np
import tensorflow as tf

from sngan import checkpoints


def saved_steps(directory, steps=(1, 2, 3)):
    """A variable saved after each step, with value 10 x step; returns (checkpoint, var)."""
    var = tf.Variable(np.zeros(3, np.float32))
    ckpt = tf.train.Checkpoint(v=var)
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=10)
    for step in steps:
        var.assign(np.full(3, 10.0 * step, np.float32))
        manager.save(checkpoint_number=step)
    var.assign(np.full(3, -1.0, np.float32))  # "a fresh process": not yet restored
    return ckpt, var


def damage(prefix):
    data = [f for f in os.listdir(os.path.dirname(prefix))
            if f.startswith(os.path.basename(prefix) + ".data")]
    for name in data:
        with open(os.path.join(os.path.dirname(prefix), name), "wb") as f:
            f.write(b"\0" * 7)


def test_kept_checkpoints_are_ordered_by_step_even_without_the_index(tmp_path):
    saved_steps(str(tmp_path), steps=(2, 10, 9))
    names = [os.path.basename(p) for p in checkpoints.kept_checkpoints(str(tmp_path))]
    assert names == ["ckpt-2", "ckpt-9", "ckpt-10"]  # numerically, not as strings
    (tmp_path / "checkpoint").write_text("garbage {{{")  # a damaged index file
    names = [os.path.basename(p) for p in checkpoints.kept_checkpoints(str(tmp_path))]
    assert names == ["ckpt-2", "ckpt-9", "ckpt-10"]
    assert checkpoints.kept_checkpoints(str(tmp_path / "missing")) == []


def test_the_newest_checkpoint_is_restored(tmp_path):
    ckpt, var = saved_steps(str(tmp_path))
    prefix = checkpoints.restore_newest(ckpt, str(tmp_path), [var])
    assert prefix.endswith("ckpt-3")
    np.testing.assert_array_equal(var.numpy(), [30.0] * 3)


def test_a_damaged_newest_checkpoint_falls_back_to_an_older_one(tmp_path, caplog):
    ckpt, var = saved_steps(str(tmp_path))
    damage(os.path.join(str(tmp_path), "ckpt-3"))
    with caplog.at_level(logging.WARNING):
        prefix = checkpoints.restore_newest(ckpt, str(tmp_path), [var])
    assert prefix.endswith("ckpt-2")
    np.testing.assert_array_equal(var.numpy(), [20.0] * 3)
    assert "ckpt-3 does not restore" in caplog.text
    assert "resumed from the older checkpoint" in caplog.text


def test_when_none_restores_the_variables_keep_their_start_values(tmp_path, caplog):
    ckpt, var = saved_steps(str(tmp_path), steps=(1, 2))
    for step in (1, 2):
        damage(os.path.join(str(tmp_path), f"ckpt-{step}"))
    with caplog.at_level(logging.WARNING):
        assert checkpoints.restore_newest(ckpt, str(tmp_path), [var]) is None
    np.testing.assert_array_equal(var.numpy(), [-1.0] * 3)
    assert "none of the 2 checkpoints" in caplog.text
    empty = tmp_path / "empty"
    assert checkpoints.restore_newest(ckpt, str(empty), [var]) is None
