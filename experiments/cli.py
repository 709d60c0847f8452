"""Command line: python -m experiments {sweep,train,evaluate,report,reference-stats,...}.

Heavy imports (TensorFlow) happen after argument parsing, because a `cpu:N` replicator needs its
logical devices configured before TensorFlow starts its runtime.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys

from common import logs, quiet_tf
from common.errors import UserError
from experiments import config as config_lib
from experiments import preflight
from experiments.running.sweep import DEFAULT_BATCH_SIZES
from replication.specs import parse_spec

log = logging.getLogger("experiments")
DEFAULT_OUT = "runs/batch_size_sweep"


class UsageError(UserError):
    """Bad command-line input (an option's value, a path that cannot be used)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as one line, like every other user error."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    return parse


def _ints_at_least(minimum: int):
    one = _int_at_least(minimum)

    def parse(text: str) -> tuple[int, ...]:
        values = tuple(one(x) for x in text.replace(" ", "").split(",") if x)
        if not values:
            raise argparse.ArgumentTypeError("expected at least one comma-separated integer")
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"repeated value in {text!r}")
        return values
    return parse


def _add_config_args(p: argparse.ArgumentParser, batch_flag: bool = True):
    p.add_argument("--preset", default="fashion_mnist", choices=sorted(config_lib.PRESETS),
                   help="named configuration (default: fashion_mnist, the CPU-sized study)")
    if batch_flag:
        p.add_argument("--batch-size", type=_int_at_least(1), help="global batch size")
    p.add_argument("--steps", type=_int_at_least(1),
                   help="generator steps (per point; see --budget)")
    p.add_argument("--n-dis", type=_int_at_least(1),
                   help="discriminator updates per generator update")
    p.add_argument("--replicator", help="replicator spec: default, cpu:N, gpu, gpu:N, "
                                        "multiworker, tpu, tpu:ADDRESS")
    p.add_argument("--protocol", choices=sorted(config_lib.EVAL_PROTOCOLS),
                   help="evaluation protocol (counts of real/fake images, splits)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override any config field, e.g. --set model.g_ch=64 (repeatable)")


def _config_from_args(args, batch_size: int | None = None,
                      check_data: bool = True) -> config_lib.RunConfig:
    """The preset with the flags and --set overrides applied, checked against its data."""
    flags = {"train.global_batch_size": batch_size or getattr(args, "batch_size", None),
             "train.steps": args.steps, "train.n_dis": args.n_dis,
             "train.replicator": args.replicator, "eval.protocol": args.protocol}
    overrides = {k: v for k, v in flags.items() if v is not None}  # 0 is a value, not unset
    overrides.update(config_lib.parse_overrides(args.set))
    cfg = config_lib.preset(args.preset, overrides)
    return preflight.check_run(cfg) if check_data else cfg


def _replicator(spec: str):
    """Configure logical CPUs before TensorFlow starts, then build the replicator."""
    import replication
    parsed = parse_spec(spec)
    if parsed.kind == "cpu" and parsed.count:
        replication.configure_logical_cpus(parsed.count)
    quiet_tf.import_tensorflow()
    return replication.make_replicator(spec)


def _worker_dir(out: str, replicator) -> str:
    """Under multiworker every worker trains; only the chief's files are the results."""
    if replicator.worker_index == 0:
        return out
    return os.path.join(out, f".worker{replicator.worker_index}")


def _own(out: str, args, claim=None) -> None:
    """Lock `out` for this process, then let `claim` check (and record) what it holds."""
    from experiments.running import lock
    lock.lock_dir(out, "python -m experiments " + shlex.join(args.argv))
    if claim is not None:
        claim(out)


def _owned_out(out: str, args, spec: str, claim=None):
    """The replicator and this process's output directory, locked and claimed.

    Done before TensorFlow starts (a busy or foreign directory costs no start-up), except under
    multiworker, where each worker writes its own directory, known once the cluster is up."""
    multiworker = parse_spec(spec).kind == "multiworker"
    if not multiworker:
        _own(out, args, claim)
    replicator = _replicator(spec)
    out = _worker_dir(out, replicator)
    if multiworker:
        _own(out, args, claim)
    return replicator, out


def _usable_dir(path: str, what: str) -> str:
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{what} {path!r} is a file, not a directory: choose another path")
    return path


def _existing_dir(path: str, what: str, needs: str) -> str:
    if not os.path.isdir(path):
        raise UsageError(f"{what} {path!r} does not exist: give the directory that holds "
                         f"{needs}")
    return path


def cmd_sweep(args):
    from experiments.running.sweep import SweepSpec
    # The base takes the sweep's first batch size: every point sets its own, and the preset's
    # (64) must not be checked against the replicas when the sweep never uses it.
    base = _config_from_args(args, batch_size=args.batch_sizes[0])
    spec = SweepSpec(base, batch_sizes=args.batch_sizes, seeds=args.seeds,
                     lr_scaling=args.lr_scaling, budget=args.budget)
    for _, cfg in spec.points():
        preflight.check_run(cfg)
    out = _usable_dir(args.out, "--out")
    print(f"sweep: preset {base.preset}, batch sizes {list(spec.batch_sizes)}, seeds "
          f"{list(spec.seeds)}, {base.train.steps} G steps ({spec.budget}), lr scaling "
          f"{spec.lr_scaling}, n_dis {base.train.n_dis}, replicator {base.train.replicator}, "
          f"protocol {base.eval.protocol} -> {out}", flush=True)
    if args.dry_run:
        for name, cfg in spec.points():
            print(name, cfg.train.steps, cfg.train.g_lr)
        if args.calibrate:
            _print_estimate(spec, out, _replicator(base.train.replicator))
        return 0
    from experiments.running import sweep_dir
    if not args.start_over:
        sweep_dir.check(out, spec.to_dict())  # refused before the lock file is even created
    replicator, out = _owned_out(
        out, args, base.train.replicator,
        lambda d: sweep_dir.claim(d, spec.to_dict(), restart=args.start_over))
    from experiments.evaluation.evaluator import Evaluator
    from experiments.reporting.report import write_report
    from experiments.running.sweep import run_sweep
    run_sweep(spec, out, replicator, Evaluator(base), calibrate=args.calibrate)
    write_report(out)
    return 0


def _print_estimate(spec, out: str, replicator) -> None:
    """The dry run's time estimate on this machine (experiments.running.calibration)."""
    from common.progress import format_duration
    from experiments.evaluation.evaluator import Evaluator
    from experiments.running.calibration import estimate_sweep
    est = estimate_sweep(spec, out, replicator, Evaluator)
    for s in est.steps:
        print(f"calibration: batch {s.batch}: {s.step_s:.3f} s/step "
              f"({s.step_flops / s.step_s / 1e9:.0f} GFLOP/s), set-up {s.setup_s:.1f} s")
    print(f"calibration: one evaluation {est.eval_s:.1f} s, once per sweep "
          f"{est.eval_setup_s:.1f} s (classifier, reference statistics, tracing)")
    for name, seconds in est.points:
        print(f"estimate: {name} " + ("finished earlier" if seconds is None
                                      else format_duration(seconds)))
    print(f"estimated time on this machine: {format_duration(est.total_s)} "
          f"({sum(s is None for _, s in est.points)} of {len(est.points)} points finished)")


def cmd_train(args):
    cfg = _config_from_args(args)
    out = _usable_dir(args.out or os.path.join("runs", f"{cfg.preset}_bs"
                                                     f"{cfg.train.global_batch_size}"), "--out")
    from experiments.running import run_dir
    # a finished result or checkpoint of another config is refused before TensorFlow starts,
    # and before the lock file is created; checked again once the directory is ours
    run_dir.check(out, cfg)
    replicator, out = _owned_out(out, args, cfg.train.replicator,
                                 lambda d: run_dir.check(d, cfg))
    from experiments.evaluation.evaluator import Evaluator
    from experiments.running.point import run_point
    record = run_point(cfg, out, replicator, Evaluator(cfg))
    print(json.dumps(dict(status=record.status, steps=record.steps,
                          images_seen=record.images_seen,
                          train_wall_time_s=record.train_wall_time_s), indent=2))
    if record.status == "done":
        s = record.final
        print(f"IS {s.is_mean:.3f} ± {s.is_std:.3f}  FID {s.fid:.3f}  KID {s.kid_mean:.5f}")
    return 0 if record.status == "done" else 2


def cmd_evaluate(args):
    from experiments import records
    run = _existing_dir(args.run, "--run", "a run's config.json and checkpoints/")
    cfg = records.read_config(run)
    if cfg is None:
        raise UsageError(f"{os.path.join(run, records.CONFIG)} is missing or unreadable: is "
                         f"{run} a run directory?")
    record = records.read_record(run)
    if record is None:
        raise UsageError(f"{run} has no finished record ({records.METRICS}): let the run "
                         "finish before re-scoring it")
    overrides = {}
    if args.protocol:
        overrides["eval.protocol"] = args.protocol
    if args.bn_mode:
        overrides["eval.bn_mode"] = args.bn_mode
    eval_cfg = preflight.check_run(cfg.with_overrides(overrides) if overrides else cfg)
    if args.replicator:
        config_lib.check_eval_replicas(eval_cfg.eval, args.replicator)
    _check_generator(run, record)
    replicator, _ = _owned_out(run, args, args.replicator or cfg.train.replicator)
    from experiments import toolbox
    from experiments.evaluation.evaluator import Evaluator
    loaded = toolbox.load_generator(run, replicator)  # committed weights, else a checkpoint
    scores = Evaluator(eval_cfg).score(loaded.sampler.generator, replicator, loaded.step,
                                       images_seen=record.images_seen)
    key = f"{eval_cfg.eval.protocol}/{eval_cfg.eval.bn_mode}"
    records.write_record(run, record.replace(evaluations={**record.evaluations, key: scores}))
    print(f"wrote evaluations[{key!r}] to {os.path.join(run, records.METRICS)}")
    return 0


def _check_generator(run: str, record) -> None:
    """Fail before TensorFlow starts if there are no weights to load."""
    from experiments import records
    from experiments.running import run_dir
    committed = record is not None and record.generator_weights and os.path.exists(
        os.path.join(run, record.generator_weights))
    if not committed and not run_dir.has_checkpoint(run):
        raise UsageError(f"{run} has no checkpoint and no committed generator weights "
                         f"({records.GENERATOR}): train the point first")


def _loaded_generator(args):
    from experiments import records
    _existing_dir(args.run, "--run", "a point's config.json and samples/ or checkpoints/")
    if records.read_config(args.run) is None:
        raise UsageError(f"{os.path.join(args.run, records.CONFIG)} is missing or unreadable: "
                         f"is {args.run} a run directory (a sweep point)?")
    _check_generator(args.run, records.read_record(args.run))
    replicator = _replicator("default")
    from experiments import toolbox
    return toolbox, toolbox.load_generator(args.run, replicator, args.step)


def cmd_sample(args):
    from experiments import toolbox
    toolbox.check_writable(args.out, (".png", ".pdf", ".npz"))
    toolbox, loaded = _loaded_generator(args)
    classes = toolbox.check_classes(args.classes, loaded.config.model.num_classes)
    bn_mode = args.bn_mode or loaded.config.eval.bn_mode
    images, labels = toolbox.sample_grid(loaded, classes, args.n, args.seed, bn_mode)
    toolbox.write_samples(args.out, loaded, images, labels, args.seed, bn_mode)
    print(f"wrote {images.shape[0] * images.shape[1]} samples ({len(classes)} classes x "
          f"{args.n}, seed {args.seed}, BN {bn_mode}, from {loaded.source}) to {args.out}")
    return 0


def cmd_export(args):
    out = _usable_dir(args.out, "--out")
    if os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"--out {out!r} exists and is not empty: choose a new directory")
    toolbox, loaded = _loaded_generator(args)
    from sngan.export import export_generator
    ev = loaded.config.eval
    export_generator(loaded.sampler, out, bn_mode=args.bn_mode, seed=ev.seed,
                     standing_batches=ev.standing_batches, batch_size=ev.batch_size)
    print(f"exported the generator ({loaded.source}, BN {args.bn_mode}) to {out}: "
          "tf.saved_model.load(out).signatures['serving_default'](z=..., labels=...)"
          "['images']")
    return 0


def cmd_report(args):
    _existing_dir(args.dir, "report directory", "a sweep's points/")
    if not os.path.isdir(os.path.join(args.dir, "points")):
        raise UsageError(f"{args.dir!r} holds no points/ directory: is it a sweep's --out?")
    from experiments.reporting.report import write_report
    write_report(args.dir)
    return 0


def cmd_reference_stats(args):
    cfg = _config_from_args(args)
    from experiments.evaluation import classifiers, reference_stats
    clf = classifiers.load_classifier(cfg.eval)
    feats = reference_stats.reference_activations(cfg.data, cfg.eval, clf, args.cache_dir)
    print(f"reference features: {feats.shape} for {cfg.data.name}/{cfg.eval.reference_split} "
          f"with {clf.name}")
    return 0


def cmd_prepare_data(args):
    cfg = _config_from_args(args, check_data=False)  # the data may not be there yet
    from experiments import data
    where = data.prepare_dataset(cfg.data, allow_download=args.allow_download)
    print(f"{cfg.data.name} is ready in {where}")
    return 0


def cmd_train_classifier(args):
    from experiments.evaluation.classifiers import fashion_mnist
    # None: the shipped classifier's path and epochs
    info = fashion_mnist.train_classifier(args.out, epochs=args.epochs, seed=args.seed)
    print(json.dumps(info, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m experiments", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sweep", help="the batch-size study (default: CPU-sized Fashion-MNIST)",
                       description="Train and score one SN-GAN per (batch size, seed), skipping "
                       "finished points and resuming unfinished ones, then write the report.")
    _add_config_args(p, batch_flag=False)
    p.add_argument("--batch-sizes", type=_ints_at_least(1), default=DEFAULT_BATCH_SIZES,
                   help="comma-separated global batch sizes (default 8,...,512)")
    p.add_argument("--seeds", type=_ints_at_least(0), default=(0,),
                   help="comma-separated seeds (default 0)")
    p.add_argument("--lr-scaling", default="none", choices=config_lib.LR_SCALING,
                   help="learning rate vs batch size, relative to batch 64 (default none)")
    p.add_argument("--budget", default="equal_steps", choices=config_lib.BUDGET_MODES,
                   help="equal generator steps per point (default) or equal images seen")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--dry-run", action="store_true",
                   help="print the points and the estimated time on this machine (from a few "
                   "calibration steps at the smallest and largest batch and one evaluation), "
                   "then exit; writes nothing")
    p.add_argument("--no-calibration", dest="calibrate", action="store_false",
                   help="with --dry-run: only list the points (no TensorFlow, instant); "
                   "for a sweep: skip the calibration its ETA starts from (a few steps at "
                   "the smallest and largest batch and one evaluation; the ETA then comes "
                   "from the finished points alone)")
    p.add_argument("--start-over", action="store_true",
                   help="delete --out's points/, report/ and sweep.json first and start "
                        "again (without it, an --out holding a sweep with other settings is "
                        "refused)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("train", help="train and score one configuration")
    _add_config_args(p)
    p.add_argument("--out", help="run directory (default runs/PRESET_bsB)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="re-score a finished point's generator (another "
                                        "protocol or BN mode); stored in its metrics.json")
    p.add_argument("--run", required=True, help="run directory (holds config.json)")
    p.add_argument("--protocol", choices=sorted(config_lib.EVAL_PROTOCOLS))
    p.add_argument("--bn-mode", choices=config_lib.BN_MODES)
    p.add_argument("--replicator", help="override the run's replicator spec")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("sample", help="draw samples from a point's generator (grid or arrays)")
    p.add_argument("--run", required=True, help="a point directory (holds config.json)")
    p.add_argument("--out", required=True, help="FILE.png|.pdf (a grid) or FILE.npz (arrays)")
    p.add_argument("--classes", type=_ints_at_least(0), default=(),
                   help="comma-separated class indices (default: every class)")
    p.add_argument("--n", type=_int_at_least(1), default=8, help="samples per class (8)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="latent seed (0)")
    p.add_argument("--bn-mode", choices=config_lib.BN_MODES,
                   help="generator BN statistics (default: the run's eval.bn_mode)")
    p.add_argument("--step", type=_int_at_least(1),
                   help="a kept checkpoint's step (default: the final generator)")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("export", help="export a point's generator as a TF SavedModel")
    p.add_argument("--run", required=True, help="a point directory (holds config.json)")
    p.add_argument("--out", required=True, help="new directory for the SavedModel")
    p.add_argument("--bn-mode", choices=config_lib.BN_MODES, default="standing",
                   help="BN statistics baked in: standing (default), moving, or batch")
    p.add_argument("--step", type=_int_at_least(1),
                   help="a kept checkpoint's step (default: the final generator)")
    p.set_defaults(func=cmd_export)

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
    p.add_argument("--epochs", type=_int_at_least(1), default=None,
                   help="training epochs (default: the shipped classifier's)")
    p.add_argument("--seed", type=_int_at_least(0), default=0)
    p.set_defaults(func=cmd_train_classifier)
    return parser


def main(argv=None) -> int:
    logs.setup()
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # recorded in lock files
    try:
        return args.func(args)
    except UserError as e:  # what went wrong and what to do, in one line; no traceback
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # results so far are on disk (atomic records, checkpoints)
        print("interrupted: run the same command again to resume", file=sys.stderr)
        return 130


def run() -> None:
    """Entry point of `python -m experiments` and of the `sngan-study` console script."""
    _exit_now(main())


def _exit_now(code: int) -> None:
    """Exit without interpreter teardown, where TensorFlow can block forever destroying
    tf.data iterators with live prefetch threads. All results are written (atomically)
    and flushed before this point."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
