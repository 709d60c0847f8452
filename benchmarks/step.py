"""Time and FLOP rate of one training step (n_dis D updates + 1 G update) against the peak.

    python -m benchmarks.step [--repeats 5] [--fashion-batches 8,64,512] [--skip-cifar10]
        [--jit] [--precision float32,bfloat16] [--quick] [--peak GFLOPS] [--out DIR]

Runs `GANTrainer.step()` (one host sync per step, as `fit` does) on synthetic in-memory data
(the input pipeline is not measured): fashion_mnist at each --fashion-batches, and a
cifar10-sized step at batch 64 with 1 D + 1 G update (mimicry's cGAN-PD step). FLOPs come
from `sngan.flops`: model FLOPs (the architecture as written, which every "of peak" column
uses unless it says executed) and executed FLOPs (as `sngan.models` runs it, with G's
up-sampling and D's pooling folded into stride-2 convolutions). --jit adds each run with
`train.jit_compile=true`. --precision times each run in each precision (sngan/precision.py;
`bfloat16_f32_activations` is the variant measured against it), in one process, side by side,
with the speed-up over the first and the fraction of the bfloat16 conv peak
(benchmarks/peak.py) for reduced precisions. Writes benchmarks/results/step.json
(step_precision.json when a reduced precision is timed).
"""
from __future__ import annotations

import argparse
import tempfile
import time

from benchmarks import harness, peak

MODULE = "benchmarks.step"
CIFAR10_STEP = {"train.n_dis": 1, "train.g_batch_multiplier": 1}  # 1 D + 1 G update


def preset_config(name: str, overrides: dict):
    """The preset's config for timing: the plain step `sngan.flops` counts, without the
    noise-scale measurement every train.noise_scale_every steps (benchmarked on its own)."""
    from experiments import configs

    return configs.preset(name, {"train.steps": 10 ** 6, "train.noise_scale_every": 0,
                                 **overrides})


def flop_rows() -> list[list]:
    """Each preset's step FLOPs at its own batch: exact, no timing."""
    from sngan import flops

    rows = []
    for name, overrides in (("fashion_mnist", {}), ("cifar10", CIFAR10_STEP),
                            ("cifar10", {}), ("imagenet128", {})):
        cfg = preset_config(name, overrides)
        m, t = cfg.model, cfg.train
        rows.append([name, f"{flops.generator_forward_flops(m) / 1e6:.1f}",
                     f"{flops.discriminator_forward_flops(m) / 1e6:.1f}",
                     t.global_batch_size, t.n_dis, t.g_batch_multiplier,
                     f"{flops.train_config_step_flops(m, t) / 1e9:.1f}",
                     f"{flops.train_config_step_flops(m, t, executed=True) / 1e9:.1f}"])
    return rows


def time_step(name: str, batch: int, overrides: dict, repeats: int, target_s: float,
              cores: int, precision: str = "float32") -> dict:
    """Median time of `GANTrainer.step()` at this preset, global batch and precision."""
    from sngan import flops

    cfg = preset_config(name, {"train.global_batch_size": batch, **overrides})
    out = dict(preset=name, batch=batch, n_dis=cfg.train.n_dis,
               g_batch_multiplier=cfg.train.g_batch_multiplier,
               jit_compile=bool(cfg.train.jit_compile), precision=precision,
               flops=flops.train_config_step_flops(cfg.model, cfg.train),
               executed_flops=flops.train_config_step_flops(cfg.model, cfg.train,
                                                            executed=True))
    with tempfile.TemporaryDirectory() as workdir:
        trainer = harness.make_trainer(cfg, workdir, precision=precision)
        t = time.perf_counter()
        trainer.step()  # trace
        trainer.step()
        first = max(time.perf_counter() - t, 1e-3) / 2
        inner = max(1, min(10, round(target_s / first)))
        timing = harness.median_seconds(trainer.step, repeats, inner=inner, warmup=1,
                                        cores=cores)
        out["jit_compile"] = trainer.jit_compile  # the mode that ran
    out["seconds_wall"], out["seconds_cpu"] = timing
    return out


def rate_rows(runs: list[dict], reference: dict) -> list[list]:
    rows, base = [], {}
    for r in runs:
        t = harness.Timing((r["seconds_wall"], r["seconds_cpu"]))
        model, executed = harness.rates(r["flops"], t), harness.rates(r["executed_flops"], t)
        key = (r["preset"], r["batch"], r.get("precision", "float32"))
        base.setdefault(key, t.wall)
        rows.append([r["preset"], r["batch"], r["n_dis"], r["g_batch_multiplier"],
                     r.get("precision", "float32"),
                     "on" if r["jit_compile"] else "off", f"{r['flops'] / 1e9:.2f}",
                     f"{t.wall * 1e3:.1f}", f"{r['batch'] * r['n_dis'] / t.wall:.0f}",
                     f"{model.wall:.0f}", f"{model.wall / reference['gflops_wall']:.2f}",
                     f"{model.cpu / reference['gflops_cpu']:.2f}",
                     f"{executed.cpu / reference['gflops_cpu']:.2f}",
                     f"{t.wall / base[key]:.2f}x"])
    return rows


def precision_rows(runs: list[dict], baseline: str, bf16_peak: dict) -> list[list]:
    """Per (preset, batch): each precision's time, speed-up over `baseline` and, for reduced
    precisions, the fraction of the bfloat16 conv peak (model FLOPs, wall clock)."""
    base = {(r["preset"], r["batch"], r["jit_compile"]): r["seconds_wall"] for r in runs
            if r["precision"] == baseline}
    rows = []
    for r in runs:
        ref = base.get((r["preset"], r["batch"], r["jit_compile"]))
        of_peak = (r["flops"] / r["seconds_wall"] / 1e9 / bf16_peak["gflops_wall"]
                   if r["precision"] != "float32" else None)
        rows.append([r["preset"], r["batch"], r["precision"], f"{r['seconds_wall'] * 1e3:.1f}",
                     f"{ref / r['seconds_wall']:.2f}x" if ref else "-",
                     f"{of_peak:.2f}" if of_peak is not None else "-"])
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    p.add_argument("--fashion-batches", default="8,64,512")
    p.add_argument("--skip-cifar10", action="store_true")
    p.add_argument("--jit", action="store_true", help="also time each run with XLA")
    p.add_argument("--precision", default="float32",
                   help="comma-separated precisions to time side by side (float32, bfloat16, "
                        "bfloat16_f32_activations); the first is the speed-up's baseline")
    p.add_argument("--quick", action="store_true",
                   help="shorter timed repeats and a smaller peak problem (a smoke run)")
    p.add_argument("--peak", type=float, default=None,
                   help="conv peak in GFLOP/s to divide by (default: measure it now)")
    p.add_argument("--inter-op-threads", type=int, default=None)
    p.add_argument("--intra-op-threads", type=int, default=None)
    p.add_argument("--out", help="directory for step.json (default: benchmarks/results)")
    args = p.parse_args(argv)
    harness.configure_threads(args.inter_op_threads, args.intra_op_threads)
    info = harness.machine(args.intra_op_threads)
    cores = harness.usable_cores(args.intra_op_threads)
    reference = peak.reference_peak(args.peak, args.repeats, args.quick, cores)
    precisions = [x for x in args.precision.split(",") if x]
    reduced = [x for x in precisions if x != "float32"]
    bf16_peak = peak.conv_peak(args.repeats, args.quick, cores, "bfloat16") if reduced else None
    target = 0.5 if args.quick else 2.0  # seconds per timed repeat

    plan = [("fashion_mnist", int(b), {}) for b in args.fashion_batches.split(",") if b]
    if not args.skip_cifar10:
        plan.append(("cifar10", 64, CIFAR10_STEP))
    runs = []
    for name, batch, overrides in plan:
        for jit in ([False, True] if args.jit else [False]):
            for precision in precisions:
                runs.append(time_step(name, batch, {**overrides, "train.jit_compile": jit},
                                      args.repeats, target, cores, precision))
                print(f"  {name} batch {batch} jit {jit} {precision}: "
                      f"{runs[-1]['seconds_wall'] * 1e3:.1f} ms/step", flush=True)
    tables = [
        harness.table(["preset", "G fwd MFLOP/img", "D fwd MFLOP/img", "global batch",
                       "n_dis", "G batch x", "GFLOP/step", "executed GFLOP/step"],
                      flop_rows(), title="Training-step FLOPs (sngan.flops, exact)"),
        harness.table(["preset", "global batch", "n_dis", "G batch x", "precision", "XLA",
                       "GFLOP/step",
                       "ms/step (wall)", "real img/s", "GFLOP/s (wall)",
                       "of conv peak (wall)", "of conv peak (CPU time)",
                       "executed, of conv peak (CPU time)", "time vs no XLA"],
                      rate_rows(runs, reference),
                      title="Achieved rate of the training step (model FLOPs unless "
                            "executed)")]
    if reduced:
        tables.append(harness.table(
            ["preset", "global batch", "precision", "ms/step (wall)", "speed-up over "
             f"{precisions[0]}", "of bfloat16 conv peak (wall)"],
            precision_rows(runs, precisions[0], bf16_peak),
            title="Reduced precision beside float32, timed in the same run",
            notes=f"bfloat16 conv peak: {bf16_peak['gflops_wall']:.0f} GFLOP/s "
                  f"({bf16_peak['what']})"))
    # a precision comparison is its own result (step_precision.json), beside the float32 one
    harness.publish("step_precision" if reduced else "step", MODULE, argv, info, reference,
                    tables, {"runs": runs, "bfloat16_conv_peak": bf16_peak}, args.out)


if __name__ == "__main__":
    main()
