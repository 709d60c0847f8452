"""What measuring the gradient noise scale costs a training step (train.noise_scale_every).

    python -m benchmarks.noise_scale [--preset fashion_mnist] [--batch-sizes 64]
        [--every N] [--steps 20] [--repeats 7] [--out DIR]

Two trainers of the same preset in one process, one with the noise scale off and one measuring
every N steps (default: the preset's train.noise_scale_every), run blocks of --steps steps in
turn, alternating so that load changes on a shared machine hit both alike; the overhead is the
ratio of their median block times minus 1. Also timed step by step: a measuring step against
the plain steps around it (their ratio r predicts the overhead at any frequency N as
(r - 1) / N), and the first measuring step, which traces its own step function once per run.
Synthetic in-memory images (the input pipeline is not measured). Writes
benchmarks/results/noise_scale.json.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from benchmarks import harness

MODULE = "benchmarks.noise_scale"


def preset_config(name: str, batch: int, every: int):
    from experiments import configs

    return configs.preset(name, {"train.global_batch_size": batch, "train.steps": 10 ** 6,
                                 "train.noise_scale_every": every})


def block_seconds(trainer, steps: int) -> float:
    """Wall seconds per step over `steps` consecutive steps (step() syncs every step)."""
    t = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    return (time.perf_counter() - t) / steps


def measure(name: str, batch: int, every: int, steps: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        plain = harness.make_trainer(preset_config(name, batch, 0), f"{tmp}/plain")
        noisy = harness.make_trainer(preset_config(name, batch, every), f"{tmp}/noisy")
        plain.step()  # trace
        for _ in range(every - 1):
            noisy.step()  # the first traces the plain step function
        t = time.perf_counter()
        noisy.step()  # step `every`: traces and runs the measuring step function
        first_measuring = time.perf_counter() - t
        plain_blocks, noisy_blocks = [], []
        for _ in range(repeats):
            plain_blocks.append(block_seconds(plain, steps))
            noisy_blocks.append(block_seconds(noisy, steps))
        measuring, unmeasured = [], []
        for _ in range(repeats * every):
            due = noisy.noise_scale.due(int(noisy.global_step.numpy()) + 1)
            t = time.perf_counter()
            noisy.step()
            (measuring if due else unmeasured).append(time.perf_counter() - t)
    p, n = statistics.median(plain_blocks), statistics.median(noisy_blocks)
    m, u = statistics.median(measuring), statistics.median(unmeasured)
    return dict(preset=name, batch=batch, every=every, steps_per_block=steps, repeats=repeats,
                plain_step_s=p, noise_scale_step_s=n, overhead=n / p - 1,
                block_overheads=[b / a - 1 for a, b in zip(plain_blocks, noisy_blocks)],
                measuring_step_s=m, unmeasured_step_s=u, measuring_step_ratio=m / u,
                predicted_overhead=(m / u - 1) / every, first_measuring_step_s=first_measuring)


def _percents(values) -> str:
    return ", ".join(f"{100 * v:+.0f}" for v in values)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="fashion_mnist")
    ap.add_argument("--batch-sizes", default="64", help="comma-separated global batch sizes")
    ap.add_argument("--every", type=int, default=None,
                    help="measure every N steps (default: the preset's train.noise_scale_every)")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed block (20)")
    ap.add_argument("--repeats", type=int, default=7, help="blocks per trainer (7)")
    ap.add_argument("--out", help="directory for noise_scale.json (benchmarks/results)")
    args = ap.parse_args(argv)
    info = harness.machine()
    from experiments import configs

    every = args.every or configs.preset(args.preset).train.noise_scale_every
    rows = [measure(args.preset, int(b), every, args.steps, args.repeats)
            for b in args.batch_sizes.split(",")]
    table = harness.table(
        ["preset", "global batch", "every", "plain ms/step", "measuring ms/step",
         "overhead (blocks)", "measuring step / plain", "predicted overhead",
         "first measuring step (trace) s"],
        [[r["preset"], r["batch"], r["every"], f"{1e3 * r['plain_step_s']:.0f}",
          f"{1e3 * r['noise_scale_step_s']:.0f}",
          f"{100 * r['overhead']:+.1f}% ({_percents(r['block_overheads'])})",
          f"{r['measuring_step_ratio']:.2f}x", f"{100 * r['predicted_overhead']:+.1f}%",
          f"{r['first_measuring_step_s']:.1f}"] for r in rows],
        title="Gradient noise scale: step overhead at train.noise_scale_every",
        notes="Medians of alternating blocks of one process's two trainers (off / on); "
              "block overheads in %. The predicted overhead is (measuring step / plain - 1) / "
              "every, from single steps. The first measuring step traces once per run.")
    harness.publish("noise_scale", MODULE, argv, info, None, [table],
                    dict(rows=rows), args.out)


if __name__ == "__main__":
    main()
