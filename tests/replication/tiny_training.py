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


def make_train_step(repl: replication.Replicator, model, opt, divisor: int):
    """One SGD step of the squared-error regression on every replica; returns the summed loss."""
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
    return train_step


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

    train_step = make_train_step(repl, model, opt, divisor)
    losses = [float(train_step(next(batches))) for _ in range(steps)]
    replica_copies = [[np.asarray(c) for c in repl.local_results(v.value)] for v in model.weights]
    return {"weights": [c[0] for c in replica_copies], "replica_copies": replica_copies,
            "losses": np.array(losses), "iterations": int(opt.iterations.numpy())}


def train_checkpointed(repl: replication.Replicator, workdir: str, steps: int = STEPS,
                       sigterm_at: int | None = None):
    """`train`, checkpointed after every step into `workdir` and resumed from it, with an
    'evaluation' (the step's loss) appended to workdir/history.json after every step. With
    the replicator watching for preemption the loop stops where its PreemptionWatcher says.
    `sigterm_at`: this process sends itself SIGTERM after that step (a preemption notice).

    Returns train's dict plus the step it resumed from; replication.Preempted propagates.
    """
    import json
    import os
    import signal

    x, y = make_data(steps, GLOBAL_BATCH)
    with repl.context():
        model = build_model(synchronized=True)
        model.set_weights(initial_weights())
        opt = repl.wrap_optimizer(keras.optimizers.SGD(0.1, momentum=0.9),
                                  model.trainable_variables)
        step = tf.Variable(0, dtype=tf.int64, trainable=False,
                           aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    variables = {f"v{i}": getattr(v, "value", v)
                 for i, v in enumerate(model.weights + opt.variables)}
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step, **variables),
                                         os.path.join(workdir, "checkpoints"), max_to_keep=2)
    if manager.latest_checkpoint:
        manager.checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
    resumed = int(step.numpy())
    history_path = os.path.join(workdir, "history.json")
    history = []
    if os.path.exists(history_path):
        with open(history_path) as f:
            history = [h for h in json.load(f) if h["step"] <= resumed]

    def input_fn(ctx):  # skips the global batches a resumed run has consumed
        per_pipeline = ctx.num_replicas_in_sync // ctx.num_input_pipelines
        return input_fn_for(x, y, GLOBAL_BATCH)(ctx).skip(resumed * per_pipeline)

    batches = iter(repl.distribute(input_fn, GLOBAL_BATCH))

    train_step = make_train_step(repl, model, opt, GLOBAL_BATCH)
    def save():
        manager.save(checkpoint_number=int(step.numpy()))
        return int(step.numpy())

    while int(step.numpy()) < steps:
        loss = float(train_step(next(batches)))
        step.assign_add(1)
        history.append({"step": int(step.numpy()), "loss": loss})
        os.makedirs(workdir, exist_ok=True)
        with open(history_path, "w") as f:
            json.dump(history, f)
        if int(step.numpy()) == sigterm_at:
            os.kill(os.getpid(), signal.SIGTERM)
        if repl.preemption is not None:
            repl.preemption.after_step(save)
    save()
    replica_copies = [[np.asarray(c) for c in repl.local_results(v.value)] for v in model.weights]
    return {"weights": [c[0] for c in replica_copies], "history": history,
            "resumed_from": resumed, "iterations": int(opt.iterations.numpy())}
