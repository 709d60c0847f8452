"""A run directory's config: written before training, and compared on every resume.

A checkpoint may only be resumed by the config that made it, up to the fields that do not
change results (logging cadence, checkpoint cadence, replicator, evaluation cadence).
"""
from __future__ import annotations

import os

import tensorflow as tf

from common.errors import UserError
from experiments import records
from experiments.config import RunConfig

RESUMABLE_FIELDS = {"train.log_every", "train.summary_every", "train.checkpoint_every",
                    "train.keep_checkpoints", "train.replicator", "eval.every"}


class ConfigMismatchError(UserError, RuntimeError):
    """A run directory holds results made with a different configuration."""


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def config_differences(saved: RunConfig, current: RunConfig) -> list[str]:
    a, b = _flatten(saved.to_dict()), _flatten(current.to_dict())
    return sorted(k for k in set(a) | set(b)
                  if k not in RESUMABLE_FIELDS and a.get(k) != b.get(k))


def has_checkpoint(run_dir: str) -> bool:
    return tf.train.latest_checkpoint(os.path.join(run_dir, "checkpoints")) is not None


def claim(run_dir: str, cfg: RunConfig) -> None:
    """Refuse a directory whose checkpoint was made by another config; then record `cfg`."""
    saved = records.read_config(run_dir)
    if saved is not None and has_checkpoint(run_dir):
        diff = config_differences(saved, cfg)
        if diff:
            raise ConfigMismatchError(
                f"{run_dir} holds a checkpoint made with a different config (differs in "
                f"{', '.join(diff)}): use a new output directory, or restore the original "
                "settings to resume")
    os.makedirs(run_dir, exist_ok=True)
    records.write_config(run_dir, cfg)
