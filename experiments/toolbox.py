"""A finished point's generator for users: load it (committed weights or a checkpoint), draw
class grids or arrays from it, export it. Nothing here builds a discriminator, an optimiser
or an input pipeline."""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from common import files
from common.errors import UserError
from experiments import grids, records
from experiments.class_names import class_names
from experiments.config import RunConfig


class ToolboxError(UserError, ValueError):
    """A run directory, class list or output path the toolbox cannot use."""


@dataclasses.dataclass
class LoadedGenerator:
    config: RunConfig
    sampler: object  # sngan.sampling.Sampler (TensorFlow is imported only to load)
    step: int | None
    source: str  # where the weights came from, for the user and the figure title


def load_generator(run_dir: str, replicator, step: int | None = None) -> LoadedGenerator:
    """The point's final generator from its committed `samples/generator.npz`; a checkpoint
    when `step` is given or when there are no committed weights."""
    from sngan import generator_io
    from sngan.sampling import Sampler
    cfg = records.read_config(run_dir)
    if cfg is None:
        raise ToolboxError(f"{os.path.join(run_dir, records.CONFIG)} is missing or unreadable: "
                           f"is {run_dir} a run directory (a sweep point)?")
    record = records.read_record(run_dir)
    weights = os.path.join(run_dir, records.GENERATOR)
    checkpoints = os.path.join(run_dir, "checkpoints")
    if step is None and record is not None and record.generator_weights \
            and os.path.exists(weights):
        from sngan import models
        with replicator.context():
            generator = models.build_generator(cfg.model)
        generator_io.load_generator_weights(generator, weights, record.generator_sha256)
        source, loaded_step = records.GENERATOR, record.steps
    elif os.path.isdir(checkpoints):
        generator, loaded_step = generator_io.restore_generator(cfg.model, checkpoints, step,
                                                                replicator=replicator)
        source = f"checkpoint at step {loaded_step}"
    else:
        raise ToolboxError(f"{run_dir} has no checkpoint and no committed generator weights "
                           f"({records.GENERATOR}): train the point first")
    sampler = Sampler(generator, replicator, cfg.model.z_dim, cfg.model.num_classes)
    return LoadedGenerator(cfg, sampler, loaded_step, source)


def check_classes(classes, num_classes: int) -> list[int]:
    if not num_classes:
        if classes:
            raise ToolboxError("this generator is unconditional: omit --classes")
        return [0]
    if not classes:
        return list(range(num_classes))
    bad = [c for c in classes if not 0 <= c < num_classes]
    if bad:
        raise ToolboxError(f"class index {bad[0]} is out of range: this generator has "
                           f"{num_classes} classes (0..{num_classes - 1})")
    return list(classes)


def check_writable(path: str, suffixes: tuple[str, ...]) -> str:
    """Fail before sampling if `path` has the wrong suffix or cannot be written."""
    if not path.endswith(suffixes):
        raise ToolboxError(f"--out {path!r} must end with one of {', '.join(suffixes)}")
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise ToolboxError(f"cannot create {directory} for --out ({e.strerror})") from None
    if not os.access(directory, os.W_OK) or os.path.isdir(path):
        raise ToolboxError(f"cannot write {path}: choose a writable file path")
    return path


def sample_grid(loaded: LoadedGenerator, classes: list[int], per_class: int, seed: int,
                bn_mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(images [classes, per_class, H, W, C] in [-1, 1], labels [classes, per_class])."""
    ev = loaded.config.eval
    labels = np.repeat(np.asarray(classes, np.int32), per_class)
    r = loaded.sampler.replicator.num_replicas
    batch = max(r, min(ev.batch_size, -(-len(labels) // r) * r))
    images = loaded.sampler.sample(len(labels), seed=seed, labels=labels, bn_mode=bn_mode,
                                   batch_size=batch, standing_batches=ev.standing_batches)
    shape = (len(classes), per_class)
    return images.reshape(shape + images.shape[1:]), labels.reshape(shape)


def write_samples(path: str, loaded: LoadedGenerator, images, labels, seed: int,
                  bn_mode: str) -> None:
    cfg = loaded.config
    if path.endswith(".npz"):
        with files.atomic_writer(path, "wb") as f:
            np.savez_compressed(f, images=images.astype(np.float32), labels=labels,
                                seed=np.int64(seed), bn_mode=np.array(bn_mode))
        return
    names = class_names(cfg.data.name, max(cfg.model.num_classes, 1))
    rows = [names[c] for c in labels[:, 0]] if cfg.model.num_classes else ["samples"]
    grids.image_rows(list(images), rows, path, formats=(os.path.splitext(path)[1],),
                     title=f"batch {cfg.train.global_batch_size}, seed {cfg.train.seed}, "
                           f"{loaded.source}, BN {bn_mode}")
