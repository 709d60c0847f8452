"""One sweep point (a batch size and seed): train or resume, score, save samples, record.

The point's `metrics.json` is written last and atomically; its presence with status 'done' or
'diverged' is what makes a sweep skip the point. Anything earlier (checkpoints, evaluation
history) lets a killed point resume where it stopped.
"""
from __future__ import annotations

import json
import logging
import os
import time

import numpy as np

from common import files
from experiments import data, environment, grids, records
from experiments.class_names import class_names
from experiments.config import RunConfig, stop_reached
from experiments.records import PointRecord, Scores
from experiments.running import lock
from experiments.running import run_dir as run_dir_lib
from replication.preemption import Preempted
from sngan import generator_io
from sngan.training import GANTrainer

log = logging.getLogger(__name__)

COMPARISON_SAMPLES = 8
COMPARISON_SEED = 2019  # same z in every run: rows of the comparison figure are comparable


def _sample(sampler, cfg: RunConfig, labels: np.ndarray, seed: int) -> np.ndarray:
    """Samples for the given labels with the run's evaluation BN settings."""
    return sampler.sample(len(labels), seed=seed, labels=labels, bn_mode=cfg.eval.bn_mode,
                          batch_size=cfg.eval.batch_size,
                          standing_batches=cfg.eval.standing_batches)


def comparison_samples(sampler, cfg: RunConfig) -> np.ndarray:
    """Same latents, same class, for the batch-size comparison figure (the 'orange' rows)."""
    labels = np.full([COMPARISON_SAMPLES],
                     cfg.eval.sample_class if cfg.model.num_classes else 0, np.int32)
    return _sample(sampler, cfg, labels, COMPARISON_SEED)


def class_grid_samples(sampler, cfg: RunConfig, per_class: int = 8) -> np.ndarray:
    classes = max(cfg.model.num_classes, 1)
    labels = np.repeat(np.arange(classes, dtype=np.int32), per_class)
    images = _sample(sampler, cfg, labels, COMPARISON_SEED + 1)
    return images.reshape((classes, per_class) + images.shape[1:])


def training_input_fn(cfg: RunConfig):
    """input_fn factory for the trainer: the seeded training stream, after `skip` batches."""
    micro = cfg.train.global_batch_size // cfg.train.grad_accumulation
    return lambda skip: data.make_input_fn(cfg.data, micro, split=cfg.data.train_split,
                                           seed=cfg.train.seed, skip_batches=skip)


def save_samples(sampler, cfg: RunConfig, run_dir: str, step: int, figure: bool = True) -> None:
    """The samples as arrays, and (`figure`: on the chief only) as the class grid figure."""
    samples_dir = os.path.join(run_dir, records.SAMPLES)
    comparison = comparison_samples(sampler, cfg)
    grid = class_grid_samples(sampler, cfg)
    with files.atomic_writer(os.path.join(samples_dir, "samples.npz"), "wb") as f:
        np.savez_compressed(f, comparison=grids.to_uint8(comparison),
                            class_grid=grids.to_uint8(grid))
    if not figure:
        return
    grids.save_class_grid(grid, os.path.join(samples_dir, "class_grid.png"),
                          title=f"batch {cfg.train.global_batch_size}, step {step}",
                          class_names=class_names(cfg.data.name, len(grid)))


def noise_scale_record(trainer, run_dir: str) -> records.NoiseScale | None:
    """Save the noise scale's measurements beside the point; their last-window summary."""
    if trainer.noise_scale is None:
        return None
    records.write_noise_series(run_dir, trainer.noise_scale.to_dict())
    summary = trainer.noise_scale.summary()
    return records.NoiseScale.from_dict(summary) if summary else None


def summary(record: PointRecord) -> str:
    """What `train` prints of a point: how it ended and, when done, its final scores."""
    text = json.dumps(dict(status=record.status, steps=record.steps,
                           images_seen=record.images_seen,
                           train_wall_time_s=record.train_wall_time_s), indent=2)
    if record.status == "done":
        s = record.final
        text += f"\nIS {s.is_mean:.3f} ± {s.is_std:.3f}  FID {s.fid:.3f}  KID {s.kid_mean:.5f}"
    return text


def _devices(replicator) -> list[str]:
    """The replicas' devices; the process's logical devices under the default strategy, which
    does not list them."""
    try:
        return [str(d) for d in replicator.strategy.extended.worker_devices]
    except (AttributeError, RuntimeError, ValueError, NotImplementedError):
        import tensorflow as tf

        return [d.name for d in tf.config.list_logical_devices()]


def run_point(cfg: RunConfig, run_dir: str, replicator, evaluator, **labels) -> PointRecord:
    """Train and score one configuration in `run_dir`; returns its record.

    `labels` are sweep facts stored with the record (point, sweep_lr_scaling, sweep_budget).
    """
    lock.lock_dir(run_dir, what="run directory")  # one writer per point (held until exit)
    done = run_dir_lib.finished_record(cfg, run_dir)
    if done is not None:
        log.info("%s: finished earlier (%s); skipping", run_dir, done.status)
        return done
    t_start = time.perf_counter()
    run_dir_lib.claim(run_dir, cfg)
    trainer = GANTrainer(cfg.model, cfg.train, replicator, training_input_fn(cfg), run_dir)
    envs = environment.start(
        run_dir, environment.current(_devices(replicator), cfg.train.replicator,
                                     trainer.restored_step),
        resuming=trainer.restored_step > 0, allow_change=cfg.train.environment_change_ok)
    history = [h for h in records.read_history(run_dir) if (h.step or 0) <= trainer.restored_step]
    if trainer.restored_step:
        records.add_interruption(run_dir, "resumed_from", trainer.restored_step)
    if trainer.noise_scale is not None:  # the measurements up to the resumed checkpoint
        trainer.noise_scale.replay(records.read_noise_series(run_dir) or {},
                                   trainer.restored_step)
    eval_time = 0.0

    def score(step: int) -> Scores:
        nonlocal eval_time
        t = time.perf_counter()
        scores = evaluator.score(trainer.sampling_generator, replicator, step,
                                 images_seen=step * trainer.images_per_step)
        if trainer.noise_scale is not None:
            noise_scale_record(trainer, run_dir)
            b_simple = trainer.noise_scale.current()
            scores = scores.replace(b_simple_d=b_simple["d"], b_simple_g=b_simple["g"])
        history.append(scores)
        records.write_history(run_dir, history)
        eval_time += time.perf_counter() - t
        return scores

    def due(step: int) -> bool:
        every = cfg.eval.every
        return bool(every) and step % every == 0 and 0 < step < cfg.train.steps

    def maybe_score(trainer_, step: int) -> bool:
        """Score when due; True (stop here) when the score meets train.stop_at."""
        return due(step) and stop_reached(cfg.train.stop_at, score(step))

    if due(trainer.restored_step) and all(h.step != trainer.restored_step for h in history):
        log.info("%s: redoing the evaluation at step %d lost by the interruption", run_dir,
                 trainer.restored_step)
        score(trainer.restored_step)
    # a run that stopped at its target and was killed before its record resumes as stopped
    at_restore = next((h for h in history if h.step == trainer.restored_step), None)
    until = (trainer.restored_step if trainer.restored_step and at_restore is not None
             and stop_reached(cfg.train.stop_at, at_restore) else None)
    try:
        result = trainer.fit(eval_callback=maybe_score, until=until)
    except Preempted as e:  # every worker saved this step; the same command resumes from it
        records.add_interruption(run_dir, "preempted_at", e.step)
        log.warning("%s: preempted at step %s; checkpoint saved", run_dir, e.step)
        raise
    facts = dict(global_batch_size=cfg.train.global_batch_size, seed=cfg.train.seed,
                 replicas=replicator.num_replicas,
                 bn_batch_per_replica=(cfg.train.global_batch_size // cfg.train.grad_accumulation
                                       // replicator.num_replicas),
                 bn_cross_replica=cfg.model.bn_cross_replica, steps=result.steps,
                 images_seen=result.images_seen,
                 train_wall_time_s=round(result.wall_time_s, 3),
                 last_losses=result.last_metrics, jit_compile=trainer.jit_compile,
                 noise_scale=noise_scale_record(trainer, run_dir),
                 stopped_at=result.stopped_at if until is None else until,
                 environments=envs, **records.read_interruptions(run_dir), **labels)
    if result.diverged_at is not None:
        record = PointRecord(status="diverged", diverged_at=result.diverged_at, **facts)
        log.warning("%s: diverged at step %d; recorded, moving on", run_dir, result.diverged_at)
    else:
        final = next((h for h in history if h.step == result.steps), None) \
            or score(result.steps)
        replicates = []
        for i in range(1, cfg.eval.replicates):
            t = time.perf_counter()
            replicates.append(evaluator.score(
                trainer.sampling_generator, replicator, result.steps,
                images_seen=final.images_seen, eval_seed=cfg.eval.seed + i))
            eval_time += time.perf_counter() - t
        save_samples(evaluator.sampler_for(trainer.sampling_generator, replicator), cfg,
                     run_dir, result.steps, figure=replicator.worker_index == 0)
        digest = generator_io.save_generator_weights(trainer.sampling_generator,
                                                     os.path.join(run_dir, records.GENERATOR))
        record = PointRecord(status="done", final=final, replicates=replicates,
                             generator_weights=records.GENERATOR, generator_sha256=digest,
                             **facts)
    record = record.replace(eval_wall_time_s=round(eval_time, 3),
                            point_wall_time_s=round(time.perf_counter() - t_start, 3))
    records.write_record(run_dir, record)
    return record
