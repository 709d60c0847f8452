"""Images/s of one SN-GAN training step (n_dis D updates + 1 G update) for the 32x32 presets.

Run on demand:  .venv/bin/python benchmarks/bench_train_step.py [--repeats 5] [--steps 5]
Reports medians over repeats (this machine is noisy), with and without XLA (jit_compile).
'img/s' counts the real images the discriminator consumes (global batch x n_dis per step).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import replication  # noqa: E402
from experiments import configs  # noqa: E402
from sngan.training import GANTrainer  # noqa: E402


def synthetic_input(cfg):
    r, c = cfg.model.resolution, cfg.model.image_channels
    images = np.random.default_rng(0).uniform(-1, 1, (512, r, r, c)).astype(np.float32)
    labels = (np.arange(512) % max(cfg.model.num_classes, 1)).astype(np.int32)

    def input_fn_for(skip):
        def input_fn(ctx=None):
            b = ctx.get_per_replica_batch_size(cfg.train.global_batch_size) if ctx else \
                cfg.train.global_batch_size
            ds = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
            return ds.batch(b, drop_remainder=True).prefetch(2)
        return input_fn
    return input_fn_for


def measure(preset: str, batch: int, jit: bool, steps: int, repeats: int, overrides=()):
    cfg = configs.preset(preset, {"train.global_batch_size": batch,
                                     "train.jit_compile": jit, "train.steps": 10 ** 6,
                                     **dict(overrides)})
    repl = replication.make_replicator("default")
    with tempfile.TemporaryDirectory() as d:
        trainer = GANTrainer(cfg.model, cfg.train, repl, synthetic_input(cfg), d)
        trainer._train_step(trainer.iterator)  # trace + compile
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            for _ in range(steps):
                out = trainer._train_step(trainer.iterator)
            float(out["g_loss"])
            times.append((time.perf_counter() - t) / steps)
    med = statistics.median(times)
    return med, batch * cfg.train.n_dis / med


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--presets", default="fashion_mnist,cifar10")
    p.add_argument("--batches", default="64")
    p.add_argument("--no-jit", action="store_true", help="skip the jit_compile rows")
    args = p.parse_args()
    rows = []
    for preset in args.presets.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            base = None
            for jit in ([False] if args.no_jit else [False, True]):
                try:
                    med, ips = measure(preset, batch, jit, args.steps, args.repeats)
                except Exception as e:  # XLA can fail on some set-ups: report, go on
                    rows.append((preset, batch, jit, float("nan"), float("nan"),
                                 f"failed: {e}"[:60]))
                    continue
                base = base or med
                rows.append((preset, batch, jit, med * 1e3, ips, f"{med / base:.2f}x"))
                print(rows[-1], flush=True)
    print("\n| preset | batch | jit_compile | s/step (median) | real img/s | time vs no-jit |")
    print("|---|---|---|---|---|---|")
    for preset, batch, jit, ms, ips, ratio in rows:
        print(f"| {preset} | {batch} | {jit} | {ms / 1e3:.3f} | {ips:.0f} | {ratio} |")


if __name__ == "__main__":
    main()
