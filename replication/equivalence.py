"""Is data parallelism exact here? R replicas x b against one replica x Rb, on a tiny model.

The comparison `tests/replication/test_equivalence.py` runs on `cpu:N` stand-ins and
`python -m experiments selfcheck` runs on the user's devices, from this one module so the two
cannot drift. A tiny batch-norm regression is trained a few steps from fixed weights on fixed
data: SGD with momentum (linear in the gradient, so summing vs averaging over replicas would
show), loss per example / GLOBAL batch (the wrapped optimizer sums gradients over replicas).
With synchronised batch norm every replica count must give the same batch-norm statistics,
losses, first-step gradients and updated weights, to float32 round-off (ATOL, RTOL).

The two faults this comparison exists to catch are parameters of `train`, so a test or a user
(`selfcheck --inject-fault`) can make it fail on purpose: `synchronized=False` (per-replica
batch norm) and `loss_divisor=` the per-replica batch.
"""
from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from replication import collectives

IN_DIM, HIDDEN = 5, 6
GLOBAL_BATCH = 8
STEPS = 5
# float32 round-off of a different summation order: what R x b may differ from 1 x Rb by
ATOL = RTOL = 2e-5
NAMES = ("dense kernel", "bn gamma", "bn beta", "bn moving_mean", "bn moving_variance",
         "head kernel", "head bias")
BN_STATISTICS = (3, 4)  # indices of the moving mean and variance in NAMES
TRAINABLE = (0, 1, 2, 5, 6)  # the rest: what the optimizer updates, in gradient order


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


def make_train_step(repl, model, opt, divisor: int):
    """One SGD step of the squared-error regression on every replica; returns the summed loss
    and the gradients summed over replicas (what the optimizer applied)."""
    def step_fn(batch):
        xb, yb = batch
        with tf.GradientTape() as tape:
            pred = model(xb, training=True)[:, 0]
            loss = collectives.average_loss(tf.square(pred - yb), divisor)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss, grads

    @tf.function
    def train_step(batch):
        return repl.reduce(repl.run(step_fn, batch), "sum")
    return train_step


def train(repl, synchronized: bool = True, steps: int = STEPS,
          global_batch: int = GLOBAL_BATCH, loss_divisor: int | None = None) -> dict:
    """Train `steps` steps on `repl`; returns numpy values: "weights" (replica 0's copy of every
    model variable, NAMES order), "replica_copies" (every local replica's), "losses" (one per
    step), "gradients" (the first step's, summed over replicas, trainable variables in order)
    and "iterations".

    `synchronized=False`: per-replica batch norm; `loss_divisor` replaces the global batch in
    the loss. Both are the faults `compare` must detect.
    """
    x, y = make_data(steps, global_batch)
    with repl.context():
        model = build_model(synchronized)
        model.set_weights(initial_weights())
        opt = repl.wrap_optimizer(keras.optimizers.SGD(0.1, momentum=0.9),
                                  model.trainable_variables)
    batches = iter(repl.distribute(input_fn_for(x, y, global_batch), global_batch))
    train_step = make_train_step(repl, model, opt, loss_divisor or global_batch)
    losses, gradients = [], None
    for _ in range(steps):
        loss, grads = train_step(next(batches))
        losses.append(float(loss))
        if gradients is None:
            gradients = [np.asarray(g) for g in grads]
    replica_copies = [[np.asarray(c) for c in repl.local_results(v.value)] for v in model.weights]
    return {"weights": [c[0] for c in replica_copies], "replica_copies": replica_copies,
            "losses": np.array(losses), "gradients": gradients,
            "iterations": int(opt.iterations.numpy())}


@dataclasses.dataclass(frozen=True)
class Gap:
    """How far a replicated run is from the one-replica reference in one quantity.

    `max_abs`: the largest |run - reference|; `excess`: the largest |run - reference| /
    (ATOL + RTOL |reference|), so the quantity agrees (numpy's allclose) iff excess <= 1."""
    quantity: str
    max_abs: float
    excess: float

    @property
    def ok(self) -> bool:
        return self.excess <= 1.0


def _gap(quantity: str, got, ref, atol: float = ATOL, rtol: float = RTOL) -> Gap:
    pairs = [(np.asarray(a, np.float64), np.asarray(b, np.float64)) for a, b in zip(got, ref)]
    diff = max(float(np.abs(a - b).max()) for a, b in pairs)
    excess = max(float((np.abs(a - b) / (atol + rtol * np.abs(b))).max()) for a, b in pairs)
    if not all(np.isfinite([diff, excess])):
        diff = excess = float("inf")
    return Gap(quantity, diff, excess)


def compare(run: dict, reference: dict) -> dict[str, Gap]:
    """The gaps of `run` (R replicas) from `reference` (one replica, the same global batch):
    batch-norm statistics, losses, first-step gradients, updated weights (every replica's
    copy, so a replica that drifted from the others counts)."""
    copies = [[c[k] for c in run["replica_copies"]] for k in range(len(run["replica_copies"][0]))]
    weights = [w for copy in copies for k, w in enumerate(copy) if k in TRAINABLE]
    ref_weights = [reference["weights"][k] for _ in copies for k in TRAINABLE]
    stats = [w for copy in copies for k, w in enumerate(copy) if k in BN_STATISTICS]
    ref_stats = [reference["weights"][k] for _ in copies for k in BN_STATISTICS]
    return {"batch-norm statistics": _gap("batch-norm statistics", stats, ref_stats),
            "losses": _gap("losses", [run["losses"]], [reference["losses"]]),
            "gradients": _gap("gradients", run["gradients"], reference["gradients"]),
            "updated weights": _gap("updated weights", weights, ref_weights)}


def reference_spec(replicator) -> str:
    """The spec of one replica on the same kind of device as `replicator`'s, in this process:
    cpu:1 or gpu:1 (on a cluster, this worker's first device of that kind). A TPU's one-core
    reference is not built: its reference runs on the host's CPU (cpu:1)."""
    kind = replicator.device_kind
    return "gpu:1" if kind == "GPU" else "cpu:1"
