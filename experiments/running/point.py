"""One sweep point (a batch size and seed): train or resume, score, save samples, record.

The point's `metrics.json` is written last and atomically; its presence with status 'done' or
'diverged' is what makes a sweep skip the point. Anything earlier (checkpoints, evaluation
history) lets a killed point resume where it stopped.
"""
from __future__ import annotations

import os
import time

import numpy as np

from experiments import data, figures, runfiles
from experiments.config import RunConfig
from sngan.training import GANTrainer

COMPARISON_SAMPLES = 8
COMPARISON_SEED = 2019  # same z in every run: rows of the comparison figure are comparable


def _sample(trainer: GANTrainer, cfg: RunConfig, labels: np.ndarray, seed: int) -> np.ndarray:
    """Samples for the given labels with the run's evaluation BN settings."""
    return trainer.sampler.sample(len(labels), seed=seed, labels=labels,
                                  bn_mode=cfg.eval.bn_mode, batch_size=cfg.eval.batch_size,
                                  standing_batches=cfg.eval.standing_batches)


def comparison_samples(trainer: GANTrainer, cfg: RunConfig) -> np.ndarray:
    """Same latents, same class, for the batch-size comparison figure (the 'orange' rows)."""
    labels = np.full([COMPARISON_SAMPLES],
                     cfg.eval.sample_class if cfg.model.num_classes else 0, np.int32)
    return _sample(trainer, cfg, labels, COMPARISON_SEED)


def class_grid_samples(trainer: GANTrainer, cfg: RunConfig, per_class: int = 8) -> np.ndarray:
    classes = max(cfg.model.num_classes, 1)
    labels = np.repeat(np.arange(classes, dtype=np.int32), per_class)
    images = _sample(trainer, cfg, labels, COMPARISON_SEED + 1)
    return images.reshape((classes, per_class) + images.shape[1:])


def training_input_fn(cfg: RunConfig):
    """input_fn factory for the trainer: the seeded training stream, after `skip` batches."""
    micro = cfg.train.global_batch_size // cfg.train.grad_accumulation
    return lambda skip: data.make_input_fn(cfg.data, micro, split=cfg.data.train_split,
                                           seed=cfg.train.seed, skip_batches=skip)


def run_point(cfg: RunConfig, run_dir: str, replicator, evaluator, log=print,
              extra: dict | None = None) -> dict:
    """Train and score one configuration in `run_dir`; returns its metrics record."""
    done = runfiles.read_metrics(run_dir, log)
    if done is not None and done["config"] == cfg.to_dict():
        log(f"{run_dir}: finished earlier ({done['status']}); skipping")
        return done
    if done is not None:
        log(f"{run_dir}: metrics.json was made with another config; recomputing")
    t_start = time.perf_counter()
    trainer = GANTrainer(cfg.model, cfg.train, replicator, training_input_fn(cfg), run_dir,
                         config_dict=cfg.to_dict(), log=log)
    history_path = os.path.join(run_dir, runfiles.HISTORY)
    history = runfiles.read_json(history_path, log=log) or []
    if not isinstance(history, list):
        history = []
    history = [h for h in history if h.get("step", 0) <= trainer.restored_step]
    eval_time = [0.0]

    def score(step: int) -> dict:
        t = time.perf_counter()
        scores = evaluator.score(trainer.sampler, replicator.num_replicas, step)
        scores["images_seen"] = step * trainer.images_per_step
        history.append(scores)
        runfiles.atomic_write_json(history_path, history)
        eval_time[0] += time.perf_counter() - t
        return scores

    def maybe_score(trainer_, step: int):
        every = cfg.eval.every
        if every and step % every == 0 and step < cfg.train.steps:
            score(step)

    result = trainer.fit(eval_callback=maybe_score)
    record = dict(config=cfg.to_dict(), run_dir=os.path.abspath(run_dir),
                  global_batch_size=cfg.train.global_batch_size,
                  seed=cfg.train.seed, replicas=replicator.num_replicas,
                  bn_batch_per_replica=(cfg.train.global_batch_size
                                        // cfg.train.grad_accumulation
                                        // replicator.num_replicas),
                  bn_cross_replica=cfg.model.bn_cross_replica,
                  steps=result.steps, images_seen=result.images_seen,
                  train_wall_time_s=round(result.wall_time_s, 3),
                  last_losses=result.last_metrics, **(extra or {}))
    if result.diverged_at is not None:
        record.update(status="diverged", diverged_at=result.diverged_at, history=history)
        log(f"{run_dir}: diverged at step {result.diverged_at}; recorded, moving on")
    else:
        final = next((h for h in history if h.get("step") == result.steps), None) \
            or score(result.steps)
        samples_dir = os.path.join(run_dir, "samples")
        os.makedirs(samples_dir, exist_ok=True)
        comparison = comparison_samples(trainer, cfg)
        grid = class_grid_samples(trainer, cfg)
        np.savez_compressed(os.path.join(samples_dir, "samples.npz"),
                            comparison=figures.to_uint8(comparison),
                            class_grid=figures.to_uint8(grid))
        figures.save_class_grid(grid, os.path.join(samples_dir, "class_grid.png"),
                                title=f"batch {cfg.train.global_batch_size}, "
                                      f"step {result.steps}")
        record.update(status="done", scores=final, history=history)
    record["eval_wall_time_s"] = round(eval_time[0], 3)
    record["point_wall_time_s"] = round(time.perf_counter() - t_start, 3)
    runfiles.atomic_write_json(os.path.join(run_dir, runfiles.METRICS), record)
    return record
