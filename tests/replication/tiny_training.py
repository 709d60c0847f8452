"""A tiny model with batch norm, trained a few steps through a Replicator.

Shared by the equivalence test, the two-worker test and its worker script, so every run
trains exactly the same thing: fixed initial weights, fixed data, SGD with momentum (linear in
the gradient, so summing vs averaging over replicas would show), loss / GLOBAL batch.
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

import replication

IN_DIM, HIDDEN = 5, 6
GLOBAL_BATCH = 8
STEPS = 5


def make_data(steps: int = STEPS, global_batch: int = GLOBAL_BATCH, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(steps * global_batch, IN_DIM)).astype(np.float32)
    x[:, 0] += np.arange(len(x)) % 4  # replicas' shards differ in distribution: BN sync matters
    y = (x @ rng.normal(size=IN_DIM)).astype(np.float32)
    return x, y


def build_model(synchronized: bool) -> keras.Model:
    return keras.Sequential([
        keras.Input((IN_DIM,)),
        keras.layers.Dense(HIDDEN, use_bias=False),
        keras.layers.BatchNormalization(synchronized=synchronized, momentum=0.8),
        keras.layers.ReLU(),
        keras.layers.Dense(1),
    ])


def initial_weights() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    shapes = [(IN_DIM, HIDDEN), (HIDDEN,), (HIDDEN,), (HIDDEN,), (HIDDEN,), (HIDDEN, 1), (1,)]
    weights = [rng.normal(scale=0.5, size=s).astype(np.float32) for s in shapes]
    weights[3], weights[4] = np.zeros(HIDDEN, np.float32), np.ones(HIDDEN, np.float32)
    return weights  # kernel, gamma, beta, moving_mean, moving_variance, kernel, bias


def input_fn_for(x, y, global_batch: int):
    """An input_fn in the TF-Replicator style: shard per worker, batch per replica."""
    def input_fn(ctx: tf.distribute.InputContext) -> tf.data.Dataset:
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds.batch(ctx.get_per_replica_batch_size(global_batch), drop_remainder=True)
    return input_fn


def train(repl: replication.Replicator, synchronized: bool = True, steps: int = STEPS,
          global_batch: int = GLOBAL_BATCH, loss_divisor: int | None = None):
    """Train `steps` steps; return (weights per model variable as numpy, per-step losses).

    `loss_divisor` replaces the global batch in the loss (to show a wrong scaling is caught).
    """
    x, y = make_data(steps, global_batch)
    with repl.context():
        model = build_model(synchronized)
        model.set_weights(initial_weights())
        opt = repl.wrap_optimizer(keras.optimizers.SGD(0.1, momentum=0.9),
                                  model.trainable_variables)
    batches = iter(repl.distribute(input_fn_for(x, y, global_batch), global_batch))
    divisor = loss_divisor or global_batch

    def step_fn(batch):
        xb, yb = batch
        with tf.GradientTape() as tape:
            pred = model(xb, training=True)[:, 0]
            loss = replication.average_loss(tf.square(pred - yb), divisor)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def train_step(batch):
        return repl.reduce(repl.run(step_fn, batch), "sum")

    losses = [float(train_step(next(batches))) for _ in range(steps)]
    replica_copies = [[np.asarray(c) for c in repl.local_results(v.value)] for v in model.weights]
    return {"weights": [c[0] for c in replica_copies], "replica_copies": replica_copies,
            "losses": np.array(losses), "iterations": int(opt.iterations.numpy())}
