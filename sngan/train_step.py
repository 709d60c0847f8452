"""One generator step's computation: n_dis discriminator updates, then one generator update.

`GANStep` holds the maths of a step (per-replica D and G updates with gradient accumulation,
the learning-rate schedule, the generator EMA, the finite-weights check); `GANTrainer`
(training.py) derives from it and owns everything around the step: building the models and
optimisers, compiling, checkpoints, the loop. Losses are per-example losses divided by the
GLOBAL batch, since the wrapped optimizer sums gradients over replicas; latents and fake labels
are drawn for the whole global batch from (seed, step, phase) and sliced per replica.
"""
from __future__ import annotations

import tensorflow as tf

import replication
from sngan import gradient_noise, losses


def linear_decay(step, base_lr: float, start: int | None, end: int):
    """Constant `base_lr`, then linear decay to 0 between `start` and `end` (SN-GAN)."""
    step = tf.cast(step, tf.float32)
    if start is None:
        return tf.constant(base_lr, tf.float32)
    frac = tf.clip_by_value((step - start) / float(max(end - start, 1)), 0.0, 1.0)
    return base_lr * (1.0 - frac)


class GANStep:
    """The step functions of `GANTrainer`, which sets the state they read: `cfg` and
    `model_cfg` (TrainConfig, ModelConfig), `replicator`, `generator`, `discriminator`,
    `g_ema` (or None), `g_opt` and `d_opt` (wrapped optimisers), `global_step`, `global_batch`,
    `micro_batch`, `g_batch_multiplier`, `num_classes`, `_noise_splits` and `_watched` (the
    weights checked finite). Subclasses may override an update (tests make one uncompilable)."""

    def _random_inputs(self, key, batch: int):
        """Latents and fake labels for this replica's slice of a global batch of `batch`."""
        z = replication.replica_normal(self.cfg.seed, key, [batch, self.model_cfg.z_dim])
        y = (replication.replica_uniform_int(self.cfg.seed + 1, key, batch, self.num_classes)
             if self.num_classes else None)
        return z, y

    def _d_replica_step(self, batches, key, measure=False):
        disc, gen = self.discriminator, self.generator
        grads = [tf.zeros_like(v) for v in disc.trainable_variables]
        norms = gradient_noise.UnitNorms(measure, self._noise_splits)
        totals = {"d_loss": 0.0, "d_real": 0.0, "d_fake": 0.0}
        for k, (real, real_y) in enumerate(batches):
            z, fake_y = self._random_inputs(key * self.cfg.grad_accumulation + k,
                                            self.micro_batch)
            fake = gen(z, fake_y, training=True)
            n = tf.shape(real)[0]
            with norms.tape() as tape:
                # One D call on real and fake together: one power iteration per D update.
                images = tf.concat([real, fake], 0)
                labels = tf.concat([real_y, fake_y], 0) if self.num_classes else None
                logits = disc(images, labels, training=True)
                real_logits, fake_logits = logits[:n], logits[n:]
                per_example = losses.discriminator_loss(self.cfg.loss, real_logits, fake_logits)
                loss = replication.average_loss(per_example, self.global_batch)
                norms.slice(per_example, self.global_batch)
            unit_grads = tape.gradient(loss, disc.trainable_variables)
            norms.add(tape, disc.trainable_variables, unit_grads)
            grads = [g + dg for g, dg in zip(grads, unit_grads)]
            totals["d_loss"] += loss
            totals["d_real"] += tf.reduce_sum(real_logits) / self.global_batch
            totals["d_fake"] += tf.reduce_sum(fake_logits) / self.global_batch
        totals.update(norms.result("d", grads))
        self.d_opt.apply_gradients(zip(grads, disc.trainable_variables))
        return totals

    def _g_replica_step(self, key, measure=False):
        disc, gen = self.discriminator, self.generator
        grads = [tf.zeros_like(v) for v in gen.trainable_variables]
        norms = gradient_noise.UnitNorms(measure, self._noise_splits)
        total = 0.0
        for k in range(self.cfg.grad_accumulation):
            z, fake_y = self._random_inputs(key * self.cfg.grad_accumulation + k,
                                            self.micro_batch * self.g_batch_multiplier)
            with norms.tape() as tape:
                fake = gen(z, fake_y, training=True)
                logits = disc(fake, fake_y, training=False)
                per_example = losses.generator_loss(self.cfg.loss, logits)
                loss = replication.average_loss(per_example,
                                                self.global_batch * self.g_batch_multiplier)
                norms.slice(per_example, self.global_batch * self.g_batch_multiplier)
            unit_grads = tape.gradient(loss, gen.trainable_variables)
            norms.add(tape, gen.trainable_variables, unit_grads)
            grads = [g + dg for g, dg in zip(grads, unit_grads)]
            total += loss
        self.g_opt.apply_gradients(zip(grads, gen.trainable_variables))
        return {"g_loss": total, **norms.result("g", grads)}

    def _step(self, iterator, measure=False):
        cfg, repl = self.cfg, self.replicator
        step = self.global_step
        self.g_opt.optimizer.learning_rate.assign(
            linear_decay(step, cfg.g_lr, cfg.lr_decay_start, cfg.steps))
        self.d_opt.optimizer.learning_rate.assign(
            linear_decay(step, cfg.d_lr, cfg.lr_decay_start, cfg.steps))
        phases = cfg.n_dis + 1
        metrics = {}
        for i in range(cfg.n_dis):
            batches = tuple(next(iterator) for _ in range(cfg.grad_accumulation))
            # a measuring step measures its last D update
            out = repl.run(self._d_update, batches, step * phases + i,
                           **({"measure": True} if measure and i == cfg.n_dis - 1 else {}))
            metrics = {k: repl.reduce(v, "sum") for k, v in out.items()}  # last D update
        out = repl.run(self._g_update, step * phases + cfg.n_dis,
                       **({"measure": True} if measure else {}))
        metrics.update({k: repl.reduce(v, "sum") for k, v in out.items()})
        if self.g_ema is not None:
            decay = cfg.ema_decay
            for e, w in zip(self.g_ema.trainable_variables, self.generator.trainable_variables):
                e.assign(decay * e + (1.0 - decay) * w)
            for e, w in zip(self.g_ema.non_trainable_variables,
                            self.generator.non_trainable_variables):
                e.assign(w)
        step.assign_add(1)
        metrics["weights_finite"] = tf.cast(tf.reduce_all(tf.stack(
            [tf.reduce_all(tf.math.is_finite(v)) for v in self._watched
             if v.dtype.is_floating])), tf.float32)
        return metrics
