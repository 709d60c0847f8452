"""What the Replicator costs: one training step through it vs the same step in a bare tf.function.

    python -m benchmarks.replicator [--steps 20] [--repeats 7] [--batch 64]
                                    [--specs default,cpu:1,cpu:2,cpu:4] [--out DIR]

A fixed small conv net (2 conv + BN + dense, 32x32x3 input, Adam), global batch --batch:
* bare      model and optimizer outside any strategy, `@tf.function` step over a dataset
            iterator: the floor;
* default   the same step through make_replicator("default"): run / average_loss /
            wrap_optimizer / distribute (the overhead target is <= 5%);
* cpu:N     MirroredStrategy over N logical CPUs, the global batch split N ways (on a
            machine with few cores this measures coordination cost, not speed-up).
Variants are timed round-robin (so load drift from other processes hits all of them), each
repeat runs --steps steps after warm-up; the table shows the median and the best ms per
step, their ratios to bare, images per second, and the number of ops in each traced step
(a load-independent view of what the Replicator adds to the graph). Writes
benchmarks/results/replicator.json.
"""
from __future__ import annotations

import argparse
import statistics
import time

import keras
import numpy as np
import tensorflow as tf

import replication
from benchmarks import harness
from replication import devices

MODULE = "benchmarks.replicator"
SHAPE, CLASSES = (32, 32, 3), 10


def build_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential([
        keras.Input(SHAPE),
        keras.layers.Conv2D(32, 3, padding="same", use_bias=False),
        keras.layers.BatchNormalization(synchronized=True),
        keras.layers.ReLU(),
        keras.layers.Conv2D(64, 3, strides=2, padding="same", use_bias=False),
        keras.layers.BatchNormalization(synchronized=True),
        keras.layers.ReLU(),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(CLASSES),
    ])


def dataset(batch: int) -> tf.data.Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4 * batch, *SHAPE)).astype(np.float32)
    y = rng.integers(0, CLASSES, size=4 * batch).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch, drop_remainder=True)


def per_example_loss(model, x, y):
    logits = model(x, training=True)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)


def bare_step_fn(global_batch: int):
    model, opt = build_model(), keras.optimizers.Adam(1e-3)
    opt.build(model.trainable_variables)
    it = iter(dataset(global_batch))

    @tf.function
    def step():
        x, y = next(it)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(per_example_loss(model, x, y))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step, 1


def replicated_step_fn(spec: str, global_batch: int):
    repl = replication.make_replicator(spec)
    with repl.context():
        model = build_model()
        opt = repl.wrap_optimizer(keras.optimizers.Adam(1e-3), model.trainable_variables)
    it = iter(repl.distribute(
        lambda ctx: dataset(ctx.get_per_replica_batch_size(global_batch)), global_batch))

    def step_fn(batch):
        x, y = batch
        with tf.GradientTape() as tape:
            loss = replication.average_loss(per_example_loss(model, x, y), global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function
    def step():
        return repl.reduce(repl.run(step_fn, next(it)), "sum")

    return step, repl.num_replicas


def time_steps(step, steps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    float(loss)  # wait for the last step
    return (time.perf_counter() - t0) / steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--specs", default="default,cpu:1,cpu:2,cpu:4")
    parser.add_argument("--out", help="directory for replicator.json "
                                      "(default: benchmarks/results)")
    args = parser.parse_args(argv)
    specs = args.specs.split(",")
    most = max([int(s.split(":")[1]) for s in specs if s.startswith("cpu:")], default=1)
    devices.configure_logical_cpus(most)  # before TensorFlow runs an op; cpu:N are subsets
    info = harness.machine()

    variants = {"bare": bare_step_fn(args.batch)}
    for spec in specs:
        variants[spec] = replicated_step_fn(spec, args.batch)
    for step, _ in variants.values():  # trace and warm up
        time_steps(step, 3)
    times = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, (step, _) in variants.items():
            times[name].append(time_steps(step, args.steps))

    bare, bare_best = statistics.median(times["bare"]), min(times["bare"])
    rows, data = [], {}
    for name, ts in times.items():
        med, best = statistics.median(ts), min(ts)
        step, replicas = variants[name]
        ops = len(step.get_concrete_function().graph.get_operations())
        data[name] = dict(replicas=replicas, graph_ops=ops, seconds_median=med,
                          seconds_best=best)
        rows.append([f"`{name}`" if name != "bare" else "bare `tf.function`", replicas, ops,
                     f"{1e3 * med:.2f}", f"{1e3 * best:.2f}", f"{med / bare:.3f}",
                     f"{best / bare_best:.3f}", f"{args.batch / med:.0f}"])
    tables = [harness.table(
        ["variant", "replicas", "graph ops", "ms/step median", "ms/step min", "median / bare",
         "min / bare", "img/s"], rows,
        title=f"global batch {args.batch}, {args.steps} steps x {args.repeats} repeats, "
              "variants round-robin")]
    harness.publish("replicator", MODULE, argv, info, None, tables, data,
                    args.out)


if __name__ == "__main__":
    main()
