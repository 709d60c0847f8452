"""A trained generator without its trainer: weights as a small .npz, or restored from a
training checkpoint, with no discriminator, optimiser or input pipeline built.

The .npz holds every generator variable (BN moving statistics included) under the same keys
the trainer's checkpoints use, is written reproducibly (same weights, same bytes, same SHA-256)
and loads without pickle.
"""
from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from common import files
from common.errors import WeightsError
from sngan import models
from sngan.checkpoints import variables_by_name


def generator_arrays(generator) -> dict[str, np.ndarray]:
    return {k: np.asarray(v.numpy()) for k, v in variables_by_name(generator.weights).items()}


def save_generator_weights(generator, path: str) -> str:
    """Writes the generator's variables atomically; returns the file's SHA-256."""
    return files.write_npz(path, generator_arrays(generator))


def load_generator_weights(generator, path: str, expected_sha256: str | None = None) -> None:
    """Assigns every variable from `path`; refuses a changed file or one of another model."""
    if not os.path.exists(path):
        raise WeightsError(f"generator weights {path} not found: train the point first, or "
                           "give the run directory that holds samples/generator.npz")
    if expected_sha256 is not None and files.file_sha256(path) != expected_sha256:
        raise WeightsError(f"{path} does not match its recorded SHA-256 {expected_sha256[:16]}...:"
                           " the file was changed after it was recorded; restore it from git")
    files.load_npz_into(variables_by_name(generator.weights), path, "generator")


def checkpoint_path(checkpoint_dir: str, step: int | None = None) -> str:
    """The latest checkpoint in `checkpoint_dir`, or the one written at `step`."""
    state = tf.train.get_checkpoint_state(checkpoint_dir)
    paths = list(state.all_model_checkpoint_paths) if state else []
    if not paths:
        raise WeightsError(f"no checkpoint in {checkpoint_dir}: train the run first (or use its "
                           "committed samples/generator.npz)")
    if step is None:
        return paths[-1]
    for path in paths:
        if path.endswith(f"-{step}"):
            return path
    steps = [p.rsplit("-", 1)[-1] for p in paths]
    raise WeightsError(f"no checkpoint at step {step} in {checkpoint_dir}; kept: {steps}")


def restore_generator(model_cfg, checkpoint_dir: str, step: int | None = None,
                      use_ema: bool | None = None, replicator=None):
    """(generator, step) from a GANTrainer checkpoint; the EMA copy when there is one unless
    `use_ema` says otherwise. Built in `replicator.context()` when a replicator is given."""
    path = checkpoint_path(checkpoint_dir, step)
    names = {name.split("/", 1)[0] for name, _ in tf.train.list_variables(path)}
    if use_ema is None:
        use_ema = "generator_ema" in names
    key = "generator_ema" if use_ema else "generator"
    if key not in names:
        raise WeightsError(f"{path} holds no '{key}' (it has {sorted(names)})")
    if replicator is not None:
        with replicator.context():
            generator = models.build_generator(model_cfg)
    else:
        generator = models.build_generator(model_cfg)
    checkpoint = tf.train.Checkpoint(**{key: variables_by_name(generator.weights)})
    try:
        checkpoint.restore(path).expect_partial().assert_existing_objects_matched()
    except AssertionError as e:
        raise WeightsError(f"{path} does not fit this generator ({e}): another model "
                           "config?") from None
    restored_step = int(tf.train.load_variable(path, "step/.ATTRIBUTES/VARIABLE_VALUE"))
    return generator, restored_step
