"""The GAN training loop: n_dis discriminator updates, then one generator update, on N replicas.

Everything distributed goes through a `replication.Replicator`; this module never touches a
strategy. One call of the compiled `train_step` performs one generator step (its maths is
sngan/train_step.py's `GANStep`, which the trainer derives from):

    for each of n_dis D updates: k micro-batches of fresh real data -> summed gradients -> Adam
    then one G update on k micro-batches of fresh latents.

Losses are per-example losses divided by the GLOBAL batch (`replication.average_loss`), since
the wrapped optimizer sums gradients over replicas; with gradient accumulation the k
micro-batch gradients are summed, so one update sees the mean over the whole global batch.
Batch norm, however, normalises each micro-batch with its own (cross-replica) statistics, so
accumulation is not identical to one large batch for the generator's BN.

Randomness (latents, fake labels) is drawn for the whole global batch from
(seed, step, phase) and sliced per replica, so it is identical for any replica count and
needs no RNG state beyond the checkpointed step counter. The input pipeline is seeded and
a resumed run skips the batches already consumed, so it sees the same data as an
uninterrupted one. Resuming takes the newest checkpoint that restores (sngan/checkpoints.py:
a damaged one falls back to an older one). Weights are checked finite after every step, so a
diverged state is never checkpointed or scored. When the replicator watches for preemption
(`Replicator.watch_preemption`), a SIGTERM makes every worker checkpoint the same step, after
that step's evaluation, and raise `replication.Preempted`.
"""
from __future__ import annotations

import functools
import logging
import math
import os
import time
from dataclasses import dataclass

import keras
import tensorflow as tf

from common import faults
from common.progress import ProgressMeter
from sngan import checkpoints, gradient_noise, grappler, models, noise_scale, options
from sngan import precision as precisions
from sngan.checkpoints import variables_by_name
from sngan.sampling import Sampler
from sngan.train_step import GANStep

log = logging.getLogger(__name__)

# Where auto mode (train.jit_compile=None) tries XLA; if compilation fails at the first step
# the trainer continues without it. Never verified on these (no GPU/TPU was available); on
# CPU XLA was measured slower (README), and with several CPU replicas it does not compile.
XLA_AUTO_DEVICE_KINDS = ("GPU", "TPU")


@dataclass
class TrainResult:
    steps: int
    wall_time_s: float
    images_seen: int
    diverged_at: int | None = None
    last_metrics: dict | None = None
    stopped_at: int | None = None  # the step an eval_callback asked to stop at


class GANTrainer(GANStep):
    """Builds G, D and their optimisers on a replicator, trains, checkpoints and resumes.

    `model_cfg` and `train_cfg` are a `sngan.config.ModelConfig` and `TrainConfig`. Which
    configs may resume which checkpoints is the caller's decision (the study's run directory
    checks it).
    `input_fn_for(skip_batches)` returns an `input_fn(InputContext)` whose data starts after
    `skip_batches` global micro-batches: distributed iterators cannot be checkpointed, so a
    resumed run skips what the interrupted one consumed (deterministic given the seed).
    """

    def __init__(self, model_cfg, train_cfg, replicator, input_fn_for, workdir: str,
                 precision: str | None = None):
        self.model_cfg, self.cfg = model_cfg, train_cfg
        self.replicator = replicator
        self.workdir = workdir
        self.global_batch = train_cfg.global_batch_size
        self.micro_batch = self.global_batch // train_cfg.grad_accumulation
        # sngan_projection's generator update draws n_gen_samples = 2x the D batch
        self.g_batch_multiplier = train_cfg.g_batch_multiplier
        replicator.per_replica_batch(self.micro_batch)  # clear error if not divisible
        # B_simple every noise_scale_every steps (sngan/noise_scale.py); None when off
        self.noise_scale, self._noise_splits = gradient_noise.tracker_for(
            train_cfg.noise_scale_every, replicator.num_replicas,
            train_cfg.grad_accumulation, self.global_batch, self.g_batch_multiplier)
        self.num_classes = model_cfg.num_classes
        # train.precision; `precision` overrides it with any variant of
        # sngan.precision.VARIANTS (benchmarks compare them)
        self.precision = precisions.get(precision or train_cfg.precision)
        problem = precisions.hardware_problem(self.precision.name, replicator.device_kind,
                                              train_cfg.precision_emulated_ok)
        if problem:
            raise precisions.PrecisionError(problem)
        os.makedirs(workdir, exist_ok=True)

        keras.utils.set_random_seed(train_cfg.seed)  # same initial weights for the same seed
        with replicator.context():
            self.generator = models.build_generator(model_cfg, self.precision)
            self.discriminator = models.build_discriminator(model_cfg, self.precision)
            self.g_ema = None
            if train_cfg.ema_decay:
                self.g_ema = models.build_generator(model_cfg, self.precision)
                for src, dst in zip(self.generator.weights, self.g_ema.weights):
                    dst.assign(src)
            self.g_opt = replicator.wrap_optimizer(keras.optimizers.Adam(
                train_cfg.g_lr, beta_1=train_cfg.beta1, beta_2=train_cfg.beta2))
            self.d_opt = replicator.wrap_optimizer(keras.optimizers.Adam(
                train_cfg.d_lr, beta_1=train_cfg.beta1, beta_2=train_cfg.beta2))
            self.g_opt.build(self.generator.trainable_variables)
            self.d_opt.build(self.discriminator.trainable_variables)
            self.global_step = tf.Variable(
                0, dtype=tf.int64, trainable=False, name="step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
            # Training wall time, checkpointed so a resumed run reports its total.
            self.train_time = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                                          name="train_time_s",
                                          aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

        trackables = dict(step=self.global_step, train_time_s=self.train_time,
                          generator=variables_by_name(self.generator.weights),
                          discriminator=variables_by_name(self.discriminator.weights),
                          g_optimizer=variables_by_name(self.g_opt.optimizer.variables),
                          d_optimizer=variables_by_name(self.d_opt.optimizer.variables))
        if self.g_ema is not None:
            trackables["generator_ema"] = variables_by_name(self.g_ema.weights)
        self.checkpoint = tf.train.Checkpoint(**trackables)
        # every checkpointed variable, to reset them after a failed restore or XLA attempt
        self._state = [self.global_step, self.train_time] + [
            v for group in trackables.values() if isinstance(group, dict) for v in group.values()]
        # finite weights are checked after every step: a NaN is never saved nor scored
        self._watched = [getattr(v, "value", v) for m in (self.generator, self.discriminator,
                                                          self.g_ema) if m is not None
                         for v in m.weights]
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, os.path.join(workdir, options.CHECKPOINTS),
            max_to_keep=train_cfg.keep_checkpoints)
        self.restored_step = self._restore()
        consumed = self.restored_step * train_cfg.n_dis * train_cfg.grad_accumulation
        self.dataset = replicator.distribute(input_fn_for(consumed), self.micro_batch)
        self.iterator = iter(self.dataset)
        self.sampler = Sampler(self.sampling_generator, replicator, model_cfg.z_dim,
                               self.num_classes)
        jit = train_cfg.jit_compile
        self._xla_on_trial = jit is None and replicator.device_kind in XLA_AUTO_DEVICE_KINDS
        self._build_step(bool(jit) or self._xla_on_trial)
        self._writer = tf.summary.create_file_writer(os.path.join(workdir, "tensorboard"))
        self._clock = time.perf_counter()

    def _build_step(self, jit: bool) -> None:
        """XLA compiles the per-replica work; the outer step reads the input iterator, which
        XLA cannot compile. `jit_compile` is the mode that runs (recorded with results).
        No AutoGraph: every loop here runs over Python values, and converting the ~60
        functions the step calls took 1.5 s of each run's 3.4 s trace (fashion_mnist, CPU)."""
        self.jit_compile = jit
        self._d_update = tf.function(self._d_replica_step, jit_compile=jit or None,
                                     autograph=False)
        self._g_update = tf.function(self._g_replica_step, jit_compile=jit or None,
                                     autograph=False)
        self._train_step = tf.function(self._step, autograph=False)
        if self.noise_scale is not None:  # measuring steps run their own trace of the step
            self._train_step = self._measuring(self._train_step, tf.function(
                functools.partial(self._step, measure=True), autograph=False))
        self._train_step = grappler.without_remapper(self._train_step)

    def _measuring(self, plain, measured):
        """The step function: `measured` on the steps the noise scale is due, else `plain`.
        A measured step's squared norms go to the tracker, not to the metrics."""
        def train_step(iterator):
            number = int(self.global_step.numpy()) + 1
            if not self.noise_scale.due(number):
                return plain(iterator)
            out = measured(iterator)
            for player in noise_scale.PLAYERS:
                self.noise_scale.observe(number, player,
                                         float(out.pop(f"noise/{player}_small_sq")),
                                         float(out.pop(f"noise/{player}_big_sq")))
            return out
        return train_step

    def _restore(self) -> int:
        restored = checkpoints.restore_newest(self.checkpoint, self.manager.directory,
                                              self._state)
        if restored:
            log.info("resumed from %s at step %d", restored, int(self.global_step.numpy()))
        return int(self.global_step.numpy())

    def step(self) -> dict[str, float]:
        """One training step (n_dis D updates, one G update); returns its metrics as floats.

        The loop's unit, public for callers that time or drive steps themselves (benchmarks).
        Under auto XLA the first call may fall back to no XLA.
        """
        if not self._xla_on_trial:
            return {k: float(v.numpy()) for k, v in self._train_step(self.iterator).items()}
        self._xla_on_trial = False
        before = [v.numpy() for v in self._state]
        try:
            return {k: float(v.numpy()) for k, v in self._train_step(self.iterator).items()}
        except tf.errors.OpError as e:
            reason = " ".join(str(e).split())[:300]
            log.warning("XLA compilation failed on %s (%s: %s); continuing without "
                        "XLA", self.replicator.device_kind, type(e).__name__, reason)
        for v, value in zip(self._state, before):  # undo what the failed attempt changed
            v.assign(value)
        self.iterator = iter(self.dataset)  # starts where the failed attempt started
        self._build_step(False)
        return {k: float(v.numpy()) for k, v in self._train_step(self.iterator).items()}

    @property
    def sampling_generator(self):
        """The generator samples come from: the EMA copy when there is one."""
        return self.g_ema or self.generator

    # -- the loop -----------------------------------------------------------------------
    @property
    def images_per_step(self) -> int:
        """Real images the discriminator consumes per generator step."""
        return self.global_batch * self.cfg.n_dis

    def sn_sigmas(self) -> dict[str, float]:
        return {layer.name: float(layer.sigma.numpy()) for layer in self.discriminator.sn_layers}

    def _summaries(self, step: int, metrics: dict, images: bool):
        with self._writer.as_default(step=step):
            for k, v in metrics.items():
                tf.summary.scalar(f"losses/{k}" if "loss" in k else f"d_outputs/{k}", v)
            tf.summary.scalar("lr/g", float(self.g_opt.optimizer.learning_rate.numpy()))
            for player, b_simple in (self.noise_scale.current() if self.noise_scale else
                                     {}).items():
                if b_simple is not None:
                    tf.summary.scalar(f"noise_scale/b_simple_{player}", b_simple)
            for name, sigma in self.sn_sigmas().items():
                tf.summary.scalar(f"sigma/{name}", sigma)
            if images:
                n = 16 if not self.num_classes else self.num_classes * 2
                grid = self.sampler.sample(n, seed=0, batch_size=self._sample_batch(n),
                                           bn_mode="batch")
                tf.summary.image("samples", (grid + 1.0) / 2.0, max_outputs=n)
        self._writer.flush()

    def _sample_batch(self, n: int) -> int:
        r = self.replicator.num_replicas
        return int(math.ceil(n / r) * r)

    def save(self) -> str:
        faults.reached("checkpoint")
        now = time.perf_counter()
        self.train_time.assign_add(now - self._clock)
        self._clock = now
        return self.manager.save(checkpoint_number=int(self.global_step.numpy()))

    def _save_this_step(self) -> int:
        """Checkpoint this step unless its periodic checkpoint exists; returns the step. For a
        preemption (replication/preemption.py: every worker saves the same step) and a stop."""
        step = int(self.global_step.numpy())
        latest = self.manager.latest_checkpoint
        if not (latest and latest.endswith(f"-{step}")):
            self.save()
        return step

    @property
    def total_train_time(self) -> float:
        return float(self.train_time.numpy()) + time.perf_counter() - self._clock

    def fit(self, eval_callback=None, until: int | None = None) -> TrainResult:
        """Train up to `cfg.steps` (or stop early at `until`, e.g. to test resumption).

        eval_callback(trainer, step) is called after every step; it decides when to score,
        and a true return value ends the run there (checkpointed; e.g. a target was reached).
        """
        cfg = self.cfg
        last = cfg.steps if until is None else min(until, cfg.steps)
        start_step = int(self.global_step.numpy())
        meter = ProgressMeter(cfg.steps, self.images_per_step, start_step)
        self._clock = time.perf_counter()
        metrics = {}
        step = start_step
        while step < last:
            metrics = self.step()
            weights_finite = metrics.pop("weights_finite") == 1.0
            if not weights_finite or not all(math.isfinite(v) for v in metrics.values()):
                # Do not checkpoint or score the broken state: the last good checkpoint stays.
                log.warning("diverged at step %d: %s%s", step + 1, metrics,
                            "" if weights_finite else " (non-finite weights)")
                return TrainResult(step, self.total_train_time,
                                   step * self.images_per_step, diverged_at=step + 1,
                                   last_metrics=metrics)
            faults.reached("step")
            step = int(self.global_step.numpy())
            if step % cfg.log_every == 0 or step == cfg.steps:
                meter.report(step, **metrics)
            if step % cfg.summary_every == 0 or step == cfg.steps:
                self._summaries(step, metrics, images=step % (cfg.summary_every * 10) == 0
                                or step == cfg.steps)
            if step % cfg.checkpoint_every == 0 or step == cfg.steps:
                self.save()
            if eval_callback is not None:
                t = time.perf_counter()
                stop = eval_callback(self, step)
                spent = time.perf_counter() - t
                self._clock += spent  # evaluation is not training time
                meter.exclude(spent)
                if stop:
                    self._save_this_step()
                    log.info("stopping at step %d: the run's stop condition was met", step)
                    return TrainResult(step, self.total_train_time, step * self.images_per_step,
                                       last_metrics=metrics, stopped_at=step)
            if self.replicator.preemption is not None:  # after a SIGTERM: all save, then stop
                self.replicator.preemption.after_step(self._save_this_step)
        return TrainResult(step, self.total_train_time, step * self.images_per_step,
                           last_metrics=metrics)
