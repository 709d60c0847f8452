"""The tiny batch-norm model of replication/equivalence.py, plus a checkpointed variant.

The model, data and training loop live in the product (replication/equivalence.py), where
`python -m experiments selfcheck` runs the same comparison on the user's devices; the tests
import them from here, so every run trains exactly the same thing. `train_checkpointed` is
for the preemption tests only.
"""
from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from replication.equivalence import (  # noqa: F401  (re-exported for the tests)
    GLOBAL_BATCH,
    STEPS,
    build_model,
    initial_weights,
    input_fn_for,
    make_data,
    make_train_step,
    train,
)


def train_checkpointed(repl, workdir: str, steps: int = STEPS,
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
        loss = float(train_step(next(batches))[0])
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
