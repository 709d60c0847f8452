"""A run directory's config: written before training, and compared on every resume.

A checkpoint may only be resumed by the config that made it, up to the fields that do not
change results (logging cadence, checkpoint cadence, replicator, evaluation cadence); a
finished result is never overwritten by another config. Nothing here imports TensorFlow, so
the command line refuses a wrong directory before TensorFlow starts.
"""
from __future__ import annotations

import os

from common.errors import UserError
from experiments import records
from experiments.config import RunConfig
from experiments.records import PointRecord
from sngan import options

RESUMABLE_FIELDS = {"train.log_every", "train.summary_every", "train.checkpoint_every",
                    "train.keep_checkpoints", "train.replicator", "eval.every",
                    # measuring leaves the update as it is (tests/sngan/test_gradient_noise.py)
                    "train.noise_scale_every",
                    # a permission to run bfloat16 emulated, not a setting of the computation
                    "train.precision_emulated_ok",
                    # a permission to resume under another environment (environment.py)
                    "train.environment_change_ok"}
CHECKPOINTS = options.CHECKPOINTS  # where the trainer keeps its checkpoints in a run directory


class ConfigMismatchError(UserError, RuntimeError):
    """A run directory holds results made with a different configuration."""


class NotARunError(UserError, FileNotFoundError):
    """A directory given as a run's lacks what the command needs from it."""


def flatten(d: dict, prefix: str = "") -> dict:
    """{'a': {'b': 1}} -> {'a.b': 1}: differences can then be named field by field."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


def config_differences(saved: RunConfig, current: RunConfig) -> list[str]:
    a, b = flatten(saved.to_dict()), flatten(current.to_dict())
    return sorted(k for k in set(a) | set(b)
                  if k not in RESUMABLE_FIELDS and a.get(k) != b.get(k))


def has_checkpoint(run_dir: str) -> bool:
    """Any checkpoint files, even if TensorFlow's own index of them (the 'checkpoint' state
    file) is damaged: such a directory still holds training worth protecting."""
    directory = os.path.join(run_dir, CHECKPOINTS)
    return os.path.isdir(directory) and any(f.endswith(".index") for f in os.listdir(directory))


def finished_record(cfg: RunConfig, run_dir: str) -> PointRecord | None:
    """The point's record if it finished with this config; a finished point made with another
    config is refused, never overwritten."""
    done = records.read_record(run_dir)
    if done is None:
        return None
    saved = records.read_config(run_dir)
    diff = (config_differences(saved, cfg) if saved is not None
            else ["config.json (missing or unreadable)"])
    if diff:
        raise ConfigMismatchError(
            f"{run_dir} holds a finished result made with a different config (differs in "
            f"{', '.join(diff)}): use another output directory; the result is kept")
    return done


def check(run_dir: str, cfg: RunConfig) -> PointRecord | None:
    """Refuse a directory whose finished result or checkpoint was made by another config;
    returns the finished record made by this config, if any. Writes nothing."""
    done = finished_record(cfg, run_dir)
    if done is not None:
        return done
    saved = records.read_config(run_dir)
    if saved is not None and has_checkpoint(run_dir):
        diff = config_differences(saved, cfg)
        if diff:
            raise ConfigMismatchError(
                f"{run_dir} holds a checkpoint made with a different config (differs in "
                f"{', '.join(diff)}): use a new output directory, or restore the original "
                "settings to resume")
    return None


def claim(run_dir: str, cfg: RunConfig) -> None:
    """Refuse a directory made by another config (see `check`); then record `cfg`."""
    check(run_dir, cfg)
    os.makedirs(run_dir, exist_ok=True)
    records.write_config(run_dir, cfg)


def require_config(run_dir: str) -> RunConfig:
    """The config of an existing run directory (a sweep point or a `train --out`)."""
    if not os.path.isdir(run_dir):
        raise NotARunError(f"--run {run_dir!r} does not exist: give a run directory (one "
                           f"that holds {records.CONFIG}, e.g. a sweep's points/NAME)")
    cfg = records.read_config(run_dir)
    if cfg is None:
        raise NotARunError(f"{os.path.join(run_dir, records.CONFIG)} is missing or unreadable:"
                           f" is {run_dir} a run directory (a sweep point)?")
    return cfg


def require_record(run_dir: str) -> PointRecord:
    """A finished point's record (to re-score it)."""
    record = records.read_record(run_dir)
    if record is None:
        raise NotARunError(f"{run_dir} has no finished record ({records.METRICS}): let the run "
                           "finish before re-scoring it")
    return record


def has_committed_generator(run_dir: str, record: PointRecord | None) -> bool:
    return record is not None and bool(record.generator_weights) and os.path.exists(
        os.path.join(run_dir, record.generator_weights))


def require_generator(run_dir: str, record: PointRecord | None) -> None:
    """Weights to load: the committed generator or a checkpoint (checked before TensorFlow)."""
    if not has_committed_generator(run_dir, record) and not has_checkpoint(run_dir):
        raise NotARunError(f"{run_dir} has no checkpoint and no committed generator weights "
                           f"({records.GENERATOR}): train the point first")
