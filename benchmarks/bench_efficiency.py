"""How close the training step and the evaluation come to this machine's float32 peak.

Run on demand (never in tests), on a quiet machine; one run prints Markdown tables of:

  (a) the measured float32 peak: a large matmul, and a large 3x3 convolution like the
      cifar10 model's (forward alone, and forward + both backward passes as in training),
      plus a fashion_mnist-sized one (32 channels) for comparison;
  (b) each preset's training-step FLOPs (`sngan.flops`, exact conv/dense count), as the
      architecture writes them (model FLOPs, which every "of peak" column uses unless it
      says "executed") and as `sngan.models` runs them (G's up-sampling and D's pooling
      folded into stride-2 convolutions: the same function in about 2/3 of the FLOPs);
  (c) achieved GFLOP/s of the trainer's compiled step and its fraction of the measured peaks,
      for fashion_mnist at global batch 8, 64, 512 (its n_dis 2) and cifar10 at 64, n_dis 1,
      G batch multiplier 1 (mimicry's cGAN-PD step: 1 D + 1 G update on 64);
  (d) the cost of one `fast`-protocol evaluation of fashion_mnist: generating and classifying
      5,000 samples (the bare cost), that plus TF-GAN's IS/FID/KID, and
      `experiments.evaluation.evaluator.Evaluator.score` (the full cost: IS/FID/KID and the
      recognisability metrics), all through the trainer's sampler;
  (e) with --sweep-dir DIR (a finished sweep): its end-to-end efficiency, model FLOPs
      (training + evaluation generation) / wall time, as a fraction of the peak measured now.

    .venv/bin/python benchmarks/bench_efficiency.py [--repeats 5] [--quick] [--breakdown]
        [--sweep-dir results/fashion_mnist] [--inter-op-threads N] [--intra-op-threads N]

Times are medians over --repeats after warm-up; the steps run on synthetic in-memory data
(the input pipeline is not measured) with one host sync per step, as `GANTrainer.fit` does.
Every rate is given by the wall clock and by CPU time (FLOPs per CPU-second of this process
times the cores used): on a shared machine the wall clock also counts the time spent waiting
for a core, CPU time does not, though it does count threads spin-waiting for a preempted
partner. Ratios measured in one run are more trustworthy than absolute numbers; with
`--intra-op-threads 1 --inter-op-threads 1` every op is single-threaded and the CPU-time
fractions are then nearly independent of other load (the kernels' own efficiency).
`--breakdown` also times the step's own convolutions alone (same shapes, same process), which
splits the step's time into convolutions and everything else.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    p.add_argument("--quick", action="store_true",
                   help="fewer steps and repeats, smaller peak problems (a smoke run)")
    p.add_argument("--sweep-dir", help="a finished sweep's output directory, for (e)")
    p.add_argument("--fashion-batches", default="8,64,512")
    p.add_argument("--skip-cifar10", action="store_true")
    p.add_argument("--skip-eval", action="store_true")
    p.add_argument("--breakdown", action="store_true",
                   help="also time each step's convolutions alone (where the time goes)")
    p.add_argument("--inter-op-threads", type=int, default=None,
                   help="tf.config.threading inter-op threads (default: TensorFlow's)")
    p.add_argument("--intra-op-threads", type=int, default=None)
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if ARGS is not None:  # before TensorFlow's runtime starts
    if ARGS.inter_op_threads is not None:
        tf.config.threading.set_inter_op_parallelism_threads(ARGS.inter_op_threads)
    if ARGS.intra_op_threads is not None:
        tf.config.threading.set_intra_op_parallelism_threads(ARGS.intra_op_threads)

from tensorflow.python.framework import ops as tf_ops  # noqa: E402

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
if ARGS is not None and ARGS.intra_op_threads:
    CORES = min(CORES, ARGS.intra_op_threads)

import replication  # noqa: E402
from experiments import config as config_lib  # noqa: E402
from experiments import configs  # noqa: E402
from sngan import flops  # noqa: E402
from sngan.training import GANTrainer  # noqa: E402


# -- timing helpers ----------------------------------------------------------------------
class Timing(tuple):
    """(wall, cpu): median seconds per call, by the wall clock and by this process's CPU time
    divided by the cores TensorFlow uses. On a shared machine the wall clock also counts
    time the process waited for a core; CPU time does not (but counts spin-waiting)."""

    @property
    def wall(self) -> float:
        return self[0]

    @property
    def cpu(self) -> float:
        return self[1]


def median_seconds(fn, repeats: int, inner: int = 1, warmup: int = 1) -> Timing:
    """Medians over `repeats` of the mean time of `inner` calls; `fn` must block (sync)."""
    for _ in range(warmup):
        fn()
    walls, cpus = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        for _ in range(inner):
            fn()
        walls.append((time.perf_counter() - t) / inner)
        cpus.append((time.process_time() - c) / inner / CORES)
    return Timing((statistics.median(walls), statistics.median(cpus)))


def registry_flops(concrete_fn, op_types=("Conv2D", "Conv2DBackpropInput",
                                          "Conv2DBackpropFilter", "MatMul")) -> int:
    """TensorFlow's registered 'flops' of a traced function's conv/matmul ops."""
    graph = concrete_fn.graph
    return int(sum(tf_ops.get_stats_for_node_def(graph, op.node_def, "flops").value or 0
                   for op in graph.get_operations() if op.type in op_types))


# -- (a) peaks ---------------------------------------------------------------------------
def _conv_fn(batch, size, c_in, c_out, k, training: bool):
    """A compiled conv (and, if training, its two backward ops) on variables; FLOPs."""
    x = tf.Variable(tf.random.normal([batch, size, size, c_in]))
    w = tf.Variable(tf.random.normal([k, k, c_in, c_out]))
    dy = tf.Variable(tf.random.normal([batch, size, size, c_out]))
    strides = [1, 1, 1, 1]

    @tf.function
    def run():
        # Every result feeds the output, so no op is pruned.
        out = tf.nn.conv2d(x, w, 1, "SAME")[0, 0, 0, 0]
        if training:
            out += tf.raw_ops.Conv2DBackpropInput(
                input_sizes=tf.shape(x), filter=w, out_backprop=dy, strides=strides,
                padding="SAME")[0, 0, 0, 0]
            out += tf.raw_ops.Conv2DBackpropFilter(
                input=x, filter_sizes=tf.shape(w), out_backprop=dy, strides=strides,
                padding="SAME")[0, 0, 0, 0]
        return out

    forward = 2 * batch * size * size * k * k * c_in * c_out
    return (lambda: run().numpy()), forward * (3 if training else 1)


def measure_peaks(repeats: int, quick: bool) -> dict[str, tuple[str, Timing]]:
    """name -> (description, Timing in GFLOP/s: by wall clock and by CPU time)."""
    out = {}
    n = 2048 if quick else 4096
    a = tf.Variable(tf.random.normal([n, n]))
    b = tf.Variable(tf.random.normal([n, n]))
    mm = tf.function(lambda: tf.matmul(a, b)[0, 0])
    t = median_seconds(lambda: mm().numpy(), repeats)
    out["matmul"] = (f"matmul {n}x{n}x{n}", rates(2 * n ** 3, t))
    big = (32, 16, 256, 256, 3) if quick else (64, 16, 256, 256, 3)
    small = (128, 32, 32, 32, 3)  # fashion_mnist's largest: D block 1 on 2 x 64 images
    for key, shape, training in (("conv_fwd", big, False), ("conv_train", big, True),
                                 ("conv32_train", small, True)):
        fn, flop = _conv_fn(*shape, training=training)
        t = median_seconds(fn, repeats)
        b_, s, ci, co, k = shape
        what = "fwd + bwd-input + bwd-filter" if training else "forward"
        out[key] = (f"conv {k}x{k} {ci}->{co} at {s}x{s}, batch {b_}, {what}", rates(flop, t))
    return out


def rates(flop: float, t: Timing) -> Timing:
    """GFLOP/s by wall clock and by CPU time."""
    return Timing((flop / t.wall / 1e9, flop / t.cpu / 1e9))


# -- (b, c) training steps ----------------------------------------------------------------
def synthetic_input_fn_for(cfg):
    r, c = cfg.model.resolution, cfg.model.image_channels
    images = np.random.default_rng(0).uniform(-1, 1, (1024, r, r, c)).astype(np.float32)
    labels = (np.arange(1024) % max(cfg.model.num_classes, 1)).astype(np.int32)

    def input_fn_for(skip):
        def input_fn(ctx=None):
            b = (ctx.get_per_replica_batch_size(cfg.train.global_batch_size) if ctx
                 else cfg.train.global_batch_size)
            ds = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
            return ds.batch(b, drop_remainder=True).prefetch(2)
        return input_fn
    return input_fn_for


def make_trainer(cfg, workdir):
    return GANTrainer(cfg.model, cfg.train, replication.make_replicator("default"),
                      synthetic_input_fn_for(cfg), workdir)


def step_timing(preset: str, batch: int, overrides: dict, repeats: int, target_s: float,
                breakdown: bool = False) -> dict:
    """Median time of the trainer's compiled step (and, with `breakdown`, of its convs alone)."""
    cfg = configs.preset(preset, {"train.global_batch_size": batch, "train.steps": 10 ** 6,
                                     **overrides})
    out = dict(preset=preset, batch=batch, n_dis=cfg.train.n_dis,
               g_mult=getattr(cfg.train, "g_batch_multiplier", 1),
               flops=flops.train_config_step_flops(cfg.model, cfg.train),
               executed_flops=flops.train_config_step_flops(cfg.model, cfg.train,
                                                            executed=True))
    with tempfile.TemporaryDirectory() as d:
        trainer = make_trainer(cfg, d)

        def one():
            float(trainer._train_step(trainer.iterator)["g_loss"])  # host sync, as fit()

        t = time.perf_counter()
        one()  # trace
        one()
        first = max(time.perf_counter() - t, 1e-3) / 2
        inner = max(1, min(10, round(target_s / first)))
        out["step"] = median_seconds(one, repeats, inner=inner, warmup=1)
        if breakdown:
            convs, conv_flops = step_convolutions(trainer, cfg)
            out["convs"] = median_seconds(convs, repeats, inner=inner, warmup=1)
            out["conv_flops"] = conv_flops
    return out


def _live_ops(graph, outputs) -> set[str]:
    """Ops a function really runs: ancestors of its outputs and stateful ops."""
    seen, stack = set(), [t.op for t in outputs] + [
        op for op in graph.get_operations() if op._is_stateful]
    while stack:
        op = stack.pop()
        if op.name not in seen:
            seen.add(op.name)
            stack += [t.op for t in op.inputs] + list(op.control_inputs)
    return seen


def step_convolutions(trainer, cfg):
    """A compiled function running every convolution of one training step alone (same
    shapes, random data in variables), and their FLOPs: the step's time if nothing but its
    convolutions cost anything."""
    key = tf.constant(0, tf.int64)
    graphs = ([trainer._d_update.get_concrete_function((next(trainer.iterator),), key)]
              * cfg.train.n_dis + [trainer._g_update.get_concrete_function(key)])
    specs = []
    for fn in graphs:
        live = _live_ops(fn.graph, fn.outputs)
        for op in fn.graph.get_operations():
            if op.name not in live:
                continue
            if op.type == "Conv2D":  # x: the input of the convolution the op belongs to
                x, w = op.inputs[0].shape, op.inputs[1].shape
            elif op.type == "Conv2DBackpropInput":
                x, w = op.outputs[0].shape, op.inputs[1].shape
            elif op.type == "Conv2DBackpropFilter":
                x, w = op.inputs[0].shape, op.outputs[0].shape
            else:
                continue
            specs.append((op.type, x.as_list(), w.as_list(), op.get_attr("padding").decode(),
                          op.get_attr("strides")[1]))
    cache, total = {}, 0
    variables = []
    for kind, x, w, pad, stride in specs:  # 'SAME' or 1x1 here: the output is x / stride
        dy = [x[0], x[1] // stride, x[2] // stride, w[3]]
        shapes = (tuple(x), tuple(w), stride)
        if shapes not in cache:  # one set of variables per shape (values do not matter)
            cache[shapes] = (tf.Variable(tf.random.normal(x)), tf.Variable(tf.random.normal(w)),
                             tf.Variable(tf.random.normal(dy)))
        variables.append((kind, pad, [1, stride, stride, 1]) + cache[shapes])
        total += 2 * dy[0] * dy[1] * dy[2] * w[0] * w[1] * w[2] * w[3]

    @tf.function
    def run():
        acc = tf.constant(0.0)
        for kind, pad, strides, x, w, dy in variables:  # every result is used: none pruned
            if kind == "Conv2D":
                r = tf.nn.conv2d(x, w, strides, pad)
            elif kind == "Conv2DBackpropInput":
                r = tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=w,
                                                   out_backprop=dy, strides=strides,
                                                   padding=pad)
            else:
                r = tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=tf.shape(w),
                                                    out_backprop=dy, strides=strides,
                                                    padding=pad)
            acc += r[0, 0, 0, 0]
        return acc

    return (lambda: run().numpy()), total


# -- (d) evaluation ---------------------------------------------------------------------
def evaluation_costs(repeats: int) -> dict:
    from experiments.evaluation import scoring
    from experiments.evaluation.evaluator import Evaluator

    cfg = configs.preset("fashion_mnist")
    ev = cfg.eval
    t = time.perf_counter()
    evaluator = Evaluator(cfg)
    setup = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        trainer = make_trainer(cfg, d)
        replicator, generator = trainer.replicator, trainer.generator
        sampler = evaluator.sampler_for(generator, replicator)  # what score() samples with
        classifier = evaluator.classifier

        def generate():
            return [x for x, _ in sampler.batches(
                ev.num_fake, seed=ev.seed, bn_mode=ev.bn_mode, batch_size=ev.batch_size,
                standing_batches=ev.standing_batches)]

        images = generate()  # trace
        logits, features = scoring.classify(images, classifier, ev)
        evaluator.score(generator, replicator, step=0)
        gen = median_seconds(generate, repeats, warmup=0)
        cls = median_seconds(lambda: scoring.classify(images, classifier, ev), repeats,
                             warmup=0)
        is_fid_kid = median_seconds(lambda: scoring.score_activations(
            logits, features, evaluator.real_features, ev), repeats)
        full = median_seconds(lambda: evaluator.score(generator, replicator, step=0), repeats,
                              warmup=0)
    per_image = registry_flops(tf.function(
        lambda x: classifier.model(x, training=False)).get_concrete_function(
        tf.TensorSpec([1, 32, 32, 1])))
    return dict(n=ev.num_fake, setup_s=setup, generate=gen, classify=cls, full=full,
                is_fid_kid=is_fid_kid,
                generate_flops=flops.evaluation_generation_flops(
                    cfg.model, ev.num_fake, ev.batch_size, ev.bn_mode, ev.standing_batches),
                generate_executed_flops=flops.evaluation_generation_flops(
                    cfg.model, ev.num_fake, ev.batch_size, ev.bn_mode, ev.standing_batches,
                    executed=True),
                classify_flops=per_image * ev.num_fake)


# -- (e) a finished sweep ---------------------------------------------------------------
def _read_json(path):
    with open(path) as f:
        return json.load(f)


def point_scorings(record: dict, point_dir: str) -> int:
    """How many times a finished point generated num_fake images: its evaluation history
    (in the record, or eval_history.json beside it), plus the final score's replicates and
    any extra evaluation modes the record lists."""
    history = record.get("history")
    if history is None and os.path.exists(os.path.join(point_dir, "eval_history.json")):
        history = _read_json(os.path.join(point_dir, "eval_history.json"))
    extra = record.get("evaluations")
    return (len(history or []) + len(record.get("replicates") or [])
            + (len(extra) if isinstance(extra, dict) else 0))


def sweep_totals(sweep_dir: str) -> dict:
    """Model FLOPs and wall time of every finished point of a sweep."""
    paths = sorted(glob.glob(os.path.join(sweep_dir, "points", "*", "metrics.json")))
    if not paths:
        raise SystemExit(f"--sweep-dir {sweep_dir}: no points/*/metrics.json")
    train_flops = eval_flops = executed_flops = 0
    train_s = eval_s = point_s = 0.0
    evaluations = 0
    rows = []
    for path in paths:
        rec = _read_json(path)
        point_dir = os.path.dirname(path)
        cfg = config_lib.RunConfig.from_dict(
            rec["config"] if "config" in rec else _read_json(
                os.path.join(point_dir, "config.json")))
        ev = cfg.eval
        n_evals = point_scorings(rec, point_dir)
        point_flops = rec["steps"] * flops.train_config_step_flops(cfg.model, cfg.train)
        train_flops += point_flops
        executed_flops += rec["steps"] * flops.train_config_step_flops(cfg.model, cfg.train,
                                                                       executed=True)
        if rec.get("train_wall_time_s"):
            rows.append((os.path.basename(point_dir), rec["steps"], rec["train_wall_time_s"],
                         point_flops))
        eval_flops += n_evals * flops.evaluation_generation_flops(
            cfg.model, ev.num_fake, ev.batch_size, ev.bn_mode, ev.standing_batches)
        executed_flops += n_evals * flops.evaluation_generation_flops(
            cfg.model, ev.num_fake, ev.batch_size, ev.bn_mode, ev.standing_batches,
            executed=True)
        evaluations += n_evals
        train_s += rec.get("train_wall_time_s") or 0.0
        eval_s += rec.get("eval_wall_time_s") or 0.0
        point_s += rec.get("point_wall_time_s") or 0.0
    return dict(points=len(paths), evaluations=evaluations, train_flops=train_flops,
                eval_flops=eval_flops, executed_flops=executed_flops, train_s=train_s,
                eval_s=eval_s, point_s=point_s, rows=rows)


# -- output -----------------------------------------------------------------------------
def main():
    args = ARGS
    repeats = max(1, 3 if args.quick and args.repeats == 5 else args.repeats)
    target = 0.5 if args.quick else 2.0  # seconds per timed repeat of training steps
    print(f"# bench_efficiency: TF {tf.__version__}, {os.cpu_count()} CPUs, "
          f"inter-op {tf.config.threading.get_inter_op_parallelism_threads() or 'default'}, "
          f"intra-op {tf.config.threading.get_intra_op_parallelism_threads() or 'default'}, "
          f"repeats {repeats}, load average at start {os.getloadavg()[0]:.2f}\n", flush=True)

    peaks = measure_peaks(repeats, args.quick)
    peak = peaks["conv_train"][1]
    print("## (a) Measured float32 peak (median of repeats)\n")
    print("| kernel | GFLOP/s (wall clock) | GFLOP/s (CPU time) |\n|---|---|---|")
    for desc, rate in peaks.values():
        print(f"| {desc} | {rate.wall:.0f} | {rate.cpu:.0f} |")
    print(f"\n'Conv peak' below is the large conv's training rate ({peak.wall:.0f} GFLOP/s by "
          f"wall clock, {peak.cpu:.0f} by CPU time); the CPU-time rate is FLOPs per "
          f"CPU-second x {CORES} cores, which other processes on a shared machine disturb "
          "much less than the wall clock.\n", flush=True)

    print("## (b) Training-step FLOPs (sngan.flops: conv + dense, exact)\n")
    print("| preset | G fwd MFLOP/img | D fwd MFLOP/img | global batch | n_dis | G batch x | "
          "GFLOP/step | executed GFLOP/step |\n|---|---|---|---|---|---|---|---|")
    for name, n_dis in (("fashion_mnist", None), ("cifar10", 1), ("cifar10", None),
                        ("imagenet128", None)):
        cfg = configs.preset(name, {"train.n_dis": n_dis} if n_dis else {})
        b, nd = cfg.train.global_batch_size, cfg.train.n_dis
        print(f"| {name} | {flops.generator_forward_flops(cfg.model) / 1e6:.1f} | "
              f"{flops.discriminator_forward_flops(cfg.model) / 1e6:.1f} | {b} | {nd} | "
              f"{getattr(cfg.train, 'g_batch_multiplier', 1)} | "
              f"{flops.train_config_step_flops(cfg.model, cfg.train) / 1e9:.1f} | "
              f"{flops.train_config_step_flops(cfg.model, cfg.train, True) / 1e9:.1f} |")
    print(flush=True)

    runs = [("fashion_mnist", int(b), {}) for b in args.fashion_batches.split(",") if b]
    if not args.skip_cifar10:
        runs.append(("cifar10", 64, {"train.n_dis": 1, "train.g_batch_multiplier": 1}))
    rows = []
    for name, batch, overrides in runs:
        rows.append(step_timing(name, batch, overrides, repeats, target,
                                breakdown=args.breakdown))
        r = rows[-1]
        print(f"  measured {name} batch {batch}: {r['step'].wall * 1e3:.1f} ms/step "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    print("\n## (c) Achieved rate of the compiled training step\n")
    print("| preset | global batch | n_dis | G batch x | GFLOP/step | ms/step (wall) | "
          "GFLOP/s (wall) | of conv peak (wall) | of conv peak (CPU time) | "
          "of matmul peak (CPU time) | executed FLOPs of conv peak (CPU time) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate = rates(r["flops"], r["step"])
        print(f"| {r['preset']} | {r['batch']} | {r['n_dis']} | {r['g_mult']} | "
              f"{r['flops'] / 1e9:.2f} | "
              f"{r['step'].wall * 1e3:.1f} | {rate.wall:.0f} | {rate.wall / peak.wall:.2f} | "
              f"{rate.cpu / peak.cpu:.2f} | {rate.cpu / peaks['matmul'][1].cpu:.2f} | "
              f"{rates(r['executed_flops'], r['step']).cpu / peak.cpu:.2f} |")
    if args.breakdown:
        print("\nWhere the step's time goes: its convolutions alone (same shapes, same "
              "process) vs the whole step.\n")
        print("| preset | global batch | convs alone ms (wall) | conv GFLOP/s (CPU) | convs "
              "of conv peak (CPU) | convs / step time (CPU) | rest of the step |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            c = rates(r["conv_flops"], r["convs"])
            share = r["convs"].cpu / r["step"].cpu
            print(f"| {r['preset']} | {r['batch']} | {r['convs'].wall * 1e3:.1f} | "
                  f"{c.cpu:.0f} | {c.cpu / peak.cpu:.2f} | {share:.2f} | {1 - share:.2f} |")
    print(flush=True)

    if not args.skip_eval:
        e = evaluation_costs(repeats)
        print("## (d) One evaluation of fashion_mnist (`fast`: 5,000 generated vs 10,000 "
              "real)\n")
        print("| part | s (wall) | s (CPU time / cores) | GFLOP | GFLOP/s (CPU time) | "
              "of conv peak (CPU) |\n|---|---|---|---|---|---|")
        g, c = e["generate_flops"] / 1e9, e["classify_flops"] / 1e9
        g_run = e["generate_executed_flops"] / 1e9
        gen, cls, full = e["generate"], e["classify"], e["full"]
        bare = Timing((gen.wall + cls.wall, gen.cpu + cls.cpu))
        ifk = e["is_fid_kid"]
        with_ifk = Timing((bare.wall + ifk.wall, bare.cpu + ifk.cpu))
        for label, t, fl in ((f"generate {e['n']} samples (trainer's sampler)", gen, g),
                             ("classify them", cls, c),
                             ("bare cost: generate + classify", bare, g + c),
                             ("bare + IS/FID/KID (TF-GAN, float64; timed alone)", with_ifk,
                              g + c),
                             ("full `Evaluator.score` (IS/FID/KID, accuracy, intra-FID, "
                              "precision/recall, density/coverage)", full, g + c)):
            print(f"| {label} | {t.wall:.2f} | {t.cpu:.2f} | {fl:.1f} | {fl / t.cpu:.0f} | "
                  f"{fl / t.cpu / peak.cpu:.2f} |")
        print(f"| (bare + IS/FID/KID) / bare | {with_ifk.wall / bare.wall:.2f}x | "
              f"{with_ifk.cpu / bare.cpu:.2f}x | | | |")
        print(f"| full / bare | {full.wall / bare.wall:.2f}x | {full.cpu / bare.cpu:.2f}x "
              f"| | | |")
        print(f"| generation, executed FLOPs | | | {g_run:.1f} | {g_run / gen.cpu:.0f} | "
              f"{g_run / gen.cpu / peak.cpu:.2f} |")
        print(f"| one-off `Evaluator` set-up (classifier + cached real features) | "
              f"{e['setup_s']:.2f} | | | | |\n", flush=True)

    if args.sweep_dir:
        s = sweep_totals(args.sweep_dir)
        total = s["train_flops"] + s["eval_flops"]
        print(f"## (e) Sweep {args.sweep_dir}: {s['points']} points, {s['evaluations']} "
              f"evaluations\n")
        print("| scope | TFLOP | wall time (s) | GFLOP/s | of conv peak (CPU-time rate) |\n"
              "|---|---|---|---|---|")
        for label, fl, sec in (("training only (train_wall_time_s)", s["train_flops"],
                                s["train_s"]),
                               ("evaluation generation (eval_wall_time_s)", s["eval_flops"],
                                s["eval_s"]),
                               ("end to end (point_wall_time_s)", total, s["point_s"])):
            rate = fl / sec / 1e9 if sec else float("nan")
            print(f"| {label} | {fl / 1e12:.2f} | {sec:.0f} | {rate:.0f} | "
                  f"{rate / peak.cpu:.2f} |")
        if s["point_s"]:
            run = s["executed_flops"] / s["point_s"] / 1e9
            print(f"| end to end, executed FLOPs | {s['executed_flops'] / 1e12:.2f} | "
                  f"{s['point_s']:.0f} | {run:.0f} | {run / peak.cpu:.2f} |")
        print("\n| point | ms/step (training) | GFLOP/s (training) | of conv peak (CPU-time "
              "rate) |\n|---|---|---|---|")
        for name, steps, sec, fl in s["rows"]:
            print(f"| {name} | {sec / steps * 1e3:.1f} | {fl / sec / 1e9:.0f} | "
                  f"{fl / sec / 1e9 / peak.cpu:.2f} |")
        print("\nThe sweep's times are from whenever and wherever it ran; the peak is "
              "measured now (its CPU-time rate is the best estimate of a quiet machine's).\n")
    print(f"load average at end {os.getloadavg()[0]:.2f} (the machine's other work slows "
          "every row; compare ratios within one run)")


if __name__ == "__main__":
    main()
