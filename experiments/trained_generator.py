"""A finished point's generator for users: load it (committed weights or a checkpoint), score
it again, draw class grids or arrays from it, export it. Nothing here builds a discriminator,
an optimiser or an input pipeline."""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from common import files
from common.errors import UserError
from experiments import grids, preflight, records
from experiments.class_names import class_names
from experiments.config import RunConfig, check_eval_replicas
from experiments.running import run_dir as run_dir_lib
from replication.startup import start_replicator

SAMPLE_SUFFIXES = (".png", ".pdf", ".npz")  # a grid (figure) or arrays


class GeneratorUseError(UserError, ValueError):
    """A run directory, class list or output path that sample, export or evaluate cannot use."""


@dataclasses.dataclass
class LoadedGenerator:
    config: RunConfig
    sampler: object  # sngan.sampling.Sampler (TensorFlow is imported only to load)
    step: int | None
    source: str  # where the weights came from, for the user and the figure title


def loadable(run_dir: str, step: int | None = None):
    """(config, record) of a run with weights to load: its committed generator, or with `step`
    (or without committed weights) a checkpoint. Cheap: callers check before TensorFlow."""
    cfg = run_dir_lib.require_config(run_dir)
    record = records.read_record(run_dir) if step is None else None  # a step: a checkpoint
    run_dir_lib.require_generator(run_dir, record)
    return cfg, record


def load_generator(run_dir: str, replicator, step: int | None = None) -> LoadedGenerator:
    """The point's final generator from its committed `samples/generator.npz`; a checkpoint
    when `step` is given or when there are no committed weights."""
    from sngan import generator_io
    from sngan.sampling import Sampler
    cfg, record = loadable(run_dir, step)
    if run_dir_lib.has_committed_generator(run_dir, record):
        from sngan import models
        with replicator.context():
            generator = models.build_generator(cfg.model)
        generator_io.load_generator_weights(generator, os.path.join(run_dir, records.GENERATOR),
                                            record.generator_sha256)
        source, loaded_step = records.GENERATOR, record.steps
    else:
        generator, loaded_step = generator_io.restore_generator(
            cfg.model, os.path.join(run_dir, run_dir_lib.CHECKPOINTS), step,
            replicator=replicator)
        source = f"checkpoint at step {loaded_step}"
    sampler = Sampler(generator, replicator, cfg.model.z_dim, cfg.model.num_classes)
    return LoadedGenerator(cfg, sampler, loaded_step, source)


def _checked_generator(run_dir: str, step: int | None) -> LoadedGenerator:
    loadable(run_dir, step)  # before TensorFlow starts
    return load_generator(run_dir, start_replicator("default"), step)


def sample_to_file(run_dir: str, out: str, step: int | None = None, classes=(),
                   per_class: int = 8, seed: int = 0, bn_mode: str | None = None) -> str:
    """Draw `per_class` samples of each class (default: every class) into `out`, a grid or
    arrays (SAMPLE_SUFFIXES); `bn_mode` None is the run's. Returns what was written."""
    check_writable(out, SAMPLE_SUFFIXES)
    loaded = _checked_generator(run_dir, step)
    classes = check_classes(classes, loaded.config.model.num_classes)
    bn_mode = bn_mode or loaded.config.eval.bn_mode
    images, labels = sample_grid(loaded, classes, per_class, seed, bn_mode)
    write_samples(out, loaded, images, labels, seed, bn_mode)
    return (f"wrote {images.shape[0] * images.shape[1]} samples ({len(classes)} classes x "
            f"{per_class}, seed {seed}, BN {bn_mode}, from {loaded.source}) to {out}")


def export(run_dir: str, out: str, step: int | None = None, bn_mode: str = "standing") -> str:
    """Export the point's generator as a SavedModel in `out`, a new or empty directory;
    returns what was written and how to call it."""
    check_export_dir(out)
    loaded = _checked_generator(run_dir, step)
    from sngan.export import export_generator
    ev = loaded.config.eval
    export_generator(loaded.sampler, out, bn_mode=bn_mode, seed=ev.seed,
                     standing_batches=ev.standing_batches, batch_size=ev.batch_size)
    return (f"exported the generator ({loaded.source}, BN {bn_mode}) to {out}: "
            "tf.saved_model.load(out).signatures['serving_default'](z=..., labels=...)"
            "['images']")


def rescoring_config(run_dir: str, protocol: str | None = None, bn_mode: str | None = None,
                     replicator: str | None = None, classifier: str | None = None) -> RunConfig:
    """The finished run's config with another evaluation protocol, BN mode or extractor,
    checked against its data, the replicas of `replicator` and the weights there are to load
    (before TensorFlow starts)."""
    cfg = run_dir_lib.require_config(run_dir)
    run_dir_lib.require_record(run_dir)
    overrides = {k: v for k, v in (("eval.protocol", protocol), ("eval.bn_mode", bn_mode),
                                   ("eval.classifier", classifier)) if v}
    cfg = preflight.check_run(cfg.with_overrides(overrides) if overrides else cfg)
    if replicator:
        check_eval_replicas(cfg.eval, replicator)
    loadable(run_dir)
    return cfg


def evaluation_key(run_cfg: RunConfig, eval_cfg: RunConfig) -> str:
    """'protocol/bn_mode', and '/extractor' when another extractor than the run's scored it
    (the keys written before extractors could be chosen stay valid)."""
    ev = eval_cfg.eval
    key = f"{ev.protocol}/{ev.bn_mode}"
    return key if ev.classifier == run_cfg.eval.classifier else f"{key}/{ev.classifier}"


def rescore(run_dir: str, eval_cfg: RunConfig, replicator,
            loaded: LoadedGenerator | None = None) -> str:
    """Score the point's final generator with `eval_cfg`'s protocol, BN mode and extractor,
    kept in its record's `evaluations` under `evaluation_key`, which is returned."""
    from experiments.evaluation.evaluator import Evaluator
    record = run_dir_lib.require_record(run_dir)
    loaded = loaded or load_generator(run_dir, replicator)  # committed weights, else a checkpoint
    scores = Evaluator(eval_cfg).score(loaded.sampler.generator, replicator, loaded.step,
                                       images_seen=record.images_seen)
    key = evaluation_key(run_dir_lib.require_config(run_dir), eval_cfg)
    records.write_record(run_dir, record.replace(evaluations={**record.evaluations,
                                                              key: scores}))
    return key


def check_classes(classes, num_classes: int) -> list[int]:
    if not num_classes:
        if classes:
            raise GeneratorUseError("this generator is unconditional: omit --classes")
        return [0]
    if not classes:
        return list(range(num_classes))
    bad = [c for c in classes if not 0 <= c < num_classes]
    if bad:
        raise GeneratorUseError(f"class index {bad[0]} is out of range: this generator has "
                           f"{num_classes} classes (0..{num_classes - 1})")
    return list(classes)


def check_export_dir(path: str) -> str:
    """A new or empty directory for an exported SavedModel."""
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise GeneratorUseError(f"--out {path!r} exists and is not empty: choose a new directory")
    return path


def check_writable(path: str, suffixes: tuple[str, ...]) -> str:
    """Fail before sampling if `path` has the wrong suffix or cannot be written."""
    if not path.endswith(suffixes):
        raise GeneratorUseError(f"--out {path!r} must end with one of {', '.join(suffixes)}")
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise GeneratorUseError(f"cannot create {directory} for --out ({e.strerror})") from None
    if not os.access(directory, os.W_OK) or os.path.isdir(path):
        raise GeneratorUseError(f"cannot write {path}: choose a writable file path")
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
