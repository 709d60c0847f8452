"""Command line: python -m experiments {sweep,train,evaluate,report,reference-stats,train-classifier}.

Heavy imports (TensorFlow) happen after argument parsing, because a `cpu:N` replicator needs its
logical devices configured before TensorFlow starts its runtime.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from experiments import config as config_lib
from experiments.sweep import DEFAULT_BATCH_SIZES

DEFAULT_OUT = "runs/batch_size_sweep"
# Errors that say what is wrong and how to fix it (bad config, missing data, weights or
# devices); anything else is a bug and keeps its traceback.
USER_ERRORS = {"ConfigError", "DatasetError", "ConfigMismatchError", "InceptionUnavailable",
               "SpecError", "DeviceUnavailableError", "FileNotFoundError"}


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.replace(" ", "").split(",") if x)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")


def _add_config_args(p: argparse.ArgumentParser, batch_flag: bool = True):
    p.add_argument("--preset", default="fashion_mnist", choices=sorted(config_lib.PRESETS),
                   help="named configuration (default: fashion_mnist, the CPU-sized study)")
    if batch_flag:
        p.add_argument("--batch-size", type=int, help="global batch size")
    p.add_argument("--steps", type=int, help="generator steps (per point; see --budget)")
    p.add_argument("--n-dis", type=int, help="discriminator updates per generator update")
    p.add_argument("--replicator", help="replicator spec: default, cpu:N, gpu, gpu:N, "
                                        "multiworker, tpu, tpu:ADDRESS")
    p.add_argument("--protocol", choices=sorted(config_lib.EVAL_PROTOCOLS),
                   help="evaluation protocol (counts of real/fake images, splits)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override any config field, e.g. --set model.g_ch=64 (repeatable)")


def _config_from_args(args) -> config_lib.RunConfig:
    overrides = {}
    if getattr(args, "batch_size", None):
        overrides["train.global_batch_size"] = args.batch_size
    if args.steps:
        overrides["train.steps"] = args.steps
    if args.n_dis:
        overrides["train.n_dis"] = args.n_dis
    if args.replicator:
        overrides["train.replicator"] = args.replicator
    if args.protocol:
        overrides["eval.protocol"] = args.protocol
    for item in args.set:
        if "=" not in item:
            raise config_lib.ConfigError(f"--set {item!r} is not SECTION.FIELD=VALUE")
        key, raw = item.split("=", 1)
        overrides[key] = config_lib._parse_value(raw)
    return config_lib.preset(args.preset, overrides)


def _replicator(spec: str):
    """Configure logical CPUs before TensorFlow starts, then build the replicator."""
    import re

    import replication
    m = re.fullmatch(r"cpu:(\d+)", spec)
    if m:
        replication.configure_logical_cpus(int(m.group(1)))
    return replication.make_replicator(spec)


def _worker_dir(out: str, replicator) -> str:
    """Under multiworker every worker trains; only the chief's files are the results."""
    if replicator.worker_index == 0:
        return out
    return os.path.join(out, f".worker{replicator.worker_index}")


def cmd_sweep(args):
    from experiments.sweep import SweepSpec, run_sweep
    base = _config_from_args(args)
    spec = SweepSpec(base, batch_sizes=args.batch_sizes, seeds=args.seeds,
                     lr_scaling=args.lr_scaling, budget=args.budget)
    print(f"sweep: preset {base.preset}, batch sizes {list(spec.batch_sizes)}, seeds "
          f"{list(spec.seeds)}, {base.train.steps} G steps ({spec.budget}), lr scaling "
          f"{spec.lr_scaling}, n_dis {base.train.n_dis}, replicator {base.train.replicator}, "
          f"protocol {base.eval.protocol} -> {args.out}", flush=True)
    if args.dry_run:
        for name, cfg in spec.points():
            print(name, cfg.train.steps, cfg.train.g_lr)
        return 0
    replicator = _replicator(base.train.replicator)
    from experiments.evaluate import Evaluator
    evaluator = Evaluator(base)
    run_sweep(spec, _worker_dir(args.out, replicator), replicator, evaluator)
    return 0


def cmd_train(args):
    cfg = _config_from_args(args)
    out = args.out or os.path.join("runs", f"{cfg.preset}_bs{cfg.train.global_batch_size}")
    replicator = _replicator(cfg.train.replicator)
    from experiments.evaluate import Evaluator
    from experiments.point import run_point
    record = run_point(cfg, _worker_dir(out, replicator), replicator, Evaluator(cfg))
    print(json.dumps({k: record.get(k) for k in ("status", "steps", "images_seen",
                                                 "train_wall_time_s")}, indent=2))
    if record["status"] == "done":
        s = record["scores"]
        print(f"IS {s['is_mean']:.3f} ± {s['is_std']:.3f}  FID {s['fid']:.3f}  "
              f"KID {s['kid_mean']:.5f}")
    return 0 if record["status"] == "done" else 2


def cmd_evaluate(args):
    from experiments import runfiles
    cfg_path = os.path.join(args.run, runfiles.CONFIG)
    if not os.path.exists(cfg_path):
        print(f"error: {cfg_path} not found: is {args.run} a run directory?", file=sys.stderr)
        return 1
    with open(cfg_path) as f:
        cfg = config_lib.RunConfig.from_dict(json.load(f))
    overrides = {}
    if args.protocol:
        overrides["eval.protocol"] = args.protocol
    if args.bn_mode:
        overrides["eval.bn_mode"] = args.bn_mode
    eval_cfg = cfg.with_overrides(overrides) if overrides else cfg
    replicator = _replicator(args.replicator or cfg.train.replicator)
    from experiments.evaluate import Evaluator
    from experiments.point import training_input_fn
    from sngan.training import GANTrainer
    trainer = GANTrainer(cfg.model, cfg.train, replicator, training_input_fn(cfg), args.run,
                         config_dict=None)
    if trainer.restored_step == 0:
        print(f"error: no checkpoint in {args.run}/checkpoints", file=sys.stderr)
        return 1
    scores = Evaluator(eval_cfg).score(trainer.sampler, replicator.num_replicas,
                                       trainer.restored_step)
    metrics_path = os.path.join(args.run, runfiles.METRICS)
    record = runfiles.read_json(metrics_path) or {}
    key = f"{eval_cfg.eval.protocol}/{eval_cfg.eval.bn_mode}"
    record.setdefault("evaluations", {})[key] = scores
    runfiles.atomic_write_json(metrics_path, record)
    print(f"wrote evaluations[{key!r}] to {metrics_path}")
    return 0


def cmd_report(args):
    from experiments.report import write_report
    write_report(args.dir)
    return 0


def cmd_reference_stats(args):
    cfg = _config_from_args(args)
    from experiments import classifiers, reference_stats
    clf = classifiers.load_classifier(cfg.eval)
    feats = reference_stats.reference_activations(cfg.data, cfg.eval, clf, args.cache_dir)
    print(f"reference features: {feats.shape} for {cfg.data.name}/{cfg.eval.reference_split} "
          f"with {clf.name}")
    return 0


def cmd_prepare_data(args):
    cfg = _config_from_args(args)
    from experiments import data
    where = data.prepare_dataset(cfg.data, allow_download=args.allow_download)
    print(f"{cfg.data.name} is ready in {where}")
    return 0


def cmd_train_classifier(args):
    from experiments.classifiers import fashion_mnist
    info = fashion_mnist.train_classifier(args.out, epochs=args.epochs, seed=args.seed)  # None: defaults
    print(json.dumps(info, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sweep", help="the batch-size study (default: CPU-sized Fashion-MNIST)",
                       description="Train and score one SN-GAN per (batch size, seed), skipping "
                       "finished points and resuming unfinished ones, then write the report.")
    _add_config_args(p, batch_flag=False)
    p.add_argument("--batch-sizes", type=_ints, default=DEFAULT_BATCH_SIZES,
                   help="comma-separated global batch sizes (default 8,...,512)")
    p.add_argument("--seeds", type=_ints, default=(0,), help="comma-separated seeds (default 0)")
    p.add_argument("--lr-scaling", default="none", choices=config_lib.LR_SCALING,
                   help="learning rate vs batch size, relative to batch 64 (default none)")
    p.add_argument("--budget", default="equal_steps", choices=config_lib.BUDGET_MODES,
                   help="equal generator steps per point (default) or equal images seen")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--dry-run", action="store_true", help="print the points and exit")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("train", help="train and score one configuration")
    _add_config_args(p)
    p.add_argument("--out", help="run directory (default runs/PRESET_bsB)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="score a run's latest checkpoint")
    p.add_argument("--run", required=True, help="run directory (holds config.json)")
    p.add_argument("--protocol", choices=sorted(config_lib.EVAL_PROTOCOLS))
    p.add_argument("--bn-mode", choices=config_lib.BN_MODES)
    p.add_argument("--replicator", help="override the run's replicator spec")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("report", help="tables, plots and figures for a sweep directory")
    p.add_argument("dir")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("reference-stats", help="precompute cached real-data features")
    _add_config_args(p)
    p.add_argument("--cache-dir")
    p.set_defaults(func=cmd_reference_stats)

    p = sub.add_parser("prepare-data", help="check or prepare a dataset (TFDS build; offline "
                                            "unless --allow-download)")
    _add_config_args(p)
    p.add_argument("--allow-download", action="store_true",
                   help="let TFDS download the dataset (never done otherwise)")
    p.set_defaults(func=cmd_prepare_data)

    p = sub.add_parser("train-classifier", help="train the shipped Fashion-MNIST classifier")
    p.add_argument("--out", default=None, help="weights path (default: the shipped asset)")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_train_classifier)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except Exception as e:  # user-facing errors get one clear line, not a traceback
        if type(e).__name__ not in USER_ERRORS:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2


def _exit_now(code: int) -> None:
    """Exit without interpreter teardown, where TensorFlow can block forever destroying
    tf.data iterators with live prefetch threads. All results are written (atomically)
    and flushed before this point."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_now(main())
