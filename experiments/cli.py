"""Command line: python -m experiments {sweep,train,evaluate,report,reference-stats,...}.

Parses and dispatches: every check and message lives in the module that owns what it checks.
Heavy imports (TensorFlow) happen after argument parsing, because a `cpu:N` replicator needs its
logical devices configured before TensorFlow starts its runtime.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from common import files, logs
from common.errors import UserError
from experiments import config as config_lib
from experiments import configs, preflight
from experiments.running import lock, run_dir, sweep_dir
from replication.preemption import PREEMPTED_EXIT_CODE, Preempted
from replication.specs import SPEC_FORMS
from sngan.options import PRECISIONS

DEFAULT_OUT = "runs/batch_size_sweep"


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as one line, like every other user error."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def _ints(minimum: int, many: bool = False):
    """argparse type: an integer >= minimum, or (many) comma-separated distinct ones."""
    def one(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    def parse(text: str):
        values = tuple(one(x) for x in text.replace(" ", "").split(",") if x) if many else ()
        if many and not values:
            raise argparse.ArgumentTypeError("expected at least one comma-separated integer")
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"repeated value in {text!r}")
        return values if many else one(text)
    return parse


def _add_config_args(p: argparse.ArgumentParser, batch_flag: bool = True):
    p.add_argument("--preset", default="fashion_mnist", choices=configs.NAMES,
                   help="experiment config, a file in experiments/configs/ (fashion_mnist)")
    if batch_flag:
        p.add_argument("--batch-size", type=_ints(1), help="global batch size")
    p.add_argument("--steps", type=_ints(1), help="generator steps (per point; see --budget)")
    p.add_argument("--n-dis", type=_ints(1), help="D updates per G update")
    p.add_argument("--replicator", help="replicator spec: " + ", ".join(SPEC_FORMS))
    p.add_argument("--protocol", choices=sorted(config_lib.EVAL_PROTOCOLS),
                   help="evaluation protocol (counts of real/fake images, splits)")
    p.add_argument("--precision", choices=PRECISIONS,
                   help="train.precision: float32 (default) or bfloat16 (bf16 convolutions "
                        "and activations, float32 variables, statistics and losses)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override any config field, e.g. --set model.g_ch=64 (repeatable)")


def _overrides(args) -> dict:
    """The config flags and --set overrides (a flag left out is not an override; 0 is)."""
    flags = {"train.global_batch_size": getattr(args, "batch_size", None),
             "train.steps": args.steps, "train.n_dis": args.n_dis,
             "train.replicator": args.replicator, "eval.protocol": args.protocol,
             "train.precision": getattr(args, "precision", None)}
    return {**{k: v for k, v in flags.items() if v is not None},
            **config_lib.parse_overrides(args.set)}


def _config_from_args(args, check_data: bool = True) -> config_lib.RunConfig:
    """The preset with the flags and --set overrides applied, checked against its data."""
    cfg = configs.preset(args.preset, _overrides(args))
    return preflight.check_run(cfg) if check_data else cfg


def cmd_sweep(args):
    from experiments.running.sweep import dry_run, named_spec, run_sweep
    axes = dict(batch_sizes=args.batch_sizes, seeds=args.seeds, lr_scaling=args.lr_scaling,
                budget=args.budget, arm=args.arm)
    spec = named_spec(args.preset, args.sweep, {k: v for k, v in axes.items() if v is not None},
                      _overrides(args))
    print(spec.describe(args.out), flush=True)
    if args.dry_run:
        for line in dry_run(spec, args.out, args.calibrate):
            print(line)
        return 0
    if not args.start_over:
        sweep_dir.check(args.out, spec.to_dict())  # before TensorFlow starts and the lock
    replicator, out = lock.own_output(args.out, args.invocation, spec.base.train.replicator)
    replicator.watch_preemption()  # SIGTERM: every worker checkpoints the same step, exits
    from experiments.evaluation.evaluator import Evaluator
    from experiments.reporting.report import write_report
    run_sweep(spec, out, replicator, Evaluator(spec.base), calibrate=args.calibrate,
              restart=args.start_over)
    if replicator.worker_index == 0 and args.report:  # the chief writes it
        write_report(out)
    return 0


def cmd_train(args):
    cfg = _config_from_args(args)
    out = args.out or os.path.join("runs", f"{cfg.preset}_bs{cfg.train.global_batch_size}")
    run_dir.check(out, cfg)  # before TensorFlow starts and the lock; run_point claims it
    replicator, out = lock.own_output(out, args.invocation, cfg.train.replicator)
    replicator.watch_preemption()  # SIGTERM: every worker checkpoints the same step, exits
    from experiments.evaluation.evaluator import Evaluator
    from experiments.running.point import run_point, summary
    record = run_point(cfg, out, replicator, Evaluator(cfg))
    print(summary(record))
    return 0 if record.status == "done" else 2


def cmd_evaluate(args):
    from experiments import records, trained_generator
    cfg = trained_generator.rescoring_config(args.run, args.protocol, args.bn_mode,
                                             args.replicator, args.classifier)
    spec = args.replicator or cfg.train.replicator
    replicator, _ = lock.own_output(args.run, args.invocation, spec)
    key = trained_generator.rescore(args.run, cfg, replicator)
    print(f"wrote evaluations[{key!r}] to {os.path.join(args.run, records.METRICS)}")
    return 0


def cmd_sample(args):
    from experiments import trained_generator
    print(trained_generator.sample_to_file(args.run, args.out, args.step, args.classes,
                                           args.n, args.seed, args.bn_mode))
    return 0


def cmd_export(args):
    from experiments import trained_generator
    print(trained_generator.export(args.run, args.out, args.step, args.bn_mode))
    return 0


def cmd_report(args):
    from experiments.reporting.report import write_report
    write_report(sweep_dir.require_points(args.dir))
    return 0


def cmd_reference_stats(args):
    cfg = _config_from_args(args)
    from experiments.evaluation import classifiers, reference_stats
    clf = classifiers.load_classifier(cfg.eval)
    feats = reference_stats.reference_activations(cfg.data, cfg.eval, clf, args.cache_dir)
    print(f"reference features: {feats.shape} for {cfg.data.name}/{cfg.eval.reference_split} "
          f"with {clf.name}")
    return 0


def cmd_robustness(args):
    """CAS and the memorisation check of each point, cached in its record (resumable)."""
    from experiments.running import run_dir as run_dir_lib
    cfgs = [run_dir_lib.require_config(r) for r in args.run]  # all checked before TensorFlow
    for r in args.run:
        run_dir_lib.require_record(r)
    want_cas, want_mem = (args.cas or not args.memorisation), (args.memorisation or not args.cas)
    from experiments.evaluation import classifiers, real_row, robustness
    from replication.startup import start_replicator
    replicator = start_replicator("default")
    sides = {}
    for run, cfg in zip(args.run, cfgs, strict=True):
        if args.classifier:
            cfg = cfg.with_overrides({"eval.classifier": args.classifier})
        name = (cfg.data, cfg.eval.classifier, cfg.eval.inception_path)
        if name not in sides:
            sides[name] = real_row.RealSide(cfg.data, cfg.eval, classifiers.load_classifier(
                cfg.eval), args.cache_dir)
        lock.lock_dir(run, args.invocation, "--run")
        try:
            keys = robustness.score_point(run, sides[name], replicator, want_cas, want_mem)
        finally:
            lock.unlock_dir(run)
        print(f"{run}: " + (f"wrote {', '.join(keys)}" if keys else "cached, skipped"),
              flush=True)
    return 0


def cmd_real_row(args):
    """The real-data row of a protocol and extractor (computed once, then cached)."""
    cfg = _config_from_args(args)
    from experiments.evaluation import classifiers, real_row
    side = real_row.RealSide(cfg.data, cfg.eval, classifiers.load_classifier(cfg.eval),
                             args.cache_dir)
    row = real_row.real_row(side, cfg.eval).to_dict()
    if args.out:  # e.g. SWEEP/real_rows/fast_EXTRACTOR.json, which the report shows
        files.atomic_write_json(args.out, row)
    print(json.dumps(row, indent=2))
    return 0


def cmd_prepare_data(args):
    cfg = _config_from_args(args, check_data=False)  # the data may not be there yet
    from experiments import data
    where = data.prepare_dataset(cfg.data, allow_download=args.allow_download)
    print(f"{cfg.data.name} is ready in {where}")
    return 0


def cmd_train_classifier(args):
    if args.classifier == "fashion_mnist_resnet":
        from experiments.evaluation.classifiers import fashion_mnist_resnet as trained
    else:
        from experiments.evaluation.classifiers import fashion_mnist as trained
    seed = {} if args.seed is None else {"seed": args.seed}  # each network has its own
    info = trained.train_classifier(args.out, epochs=args.epochs, **seed)
    print(json.dumps(info, indent=2))
    return 0


def cmd_noise_scale(args):
    from experiments.running import noise_scale_run
    cfg = preflight.check_run(noise_scale_run.run_config(args.preset, _overrides(args), args.steps))
    result = noise_scale_run.run(cfg, args.steps or cfg.train.steps, args.out, args.invocation)
    print(noise_scale_run.describe(result))
    if args.save:
        noise_scale_run.save(args.save, result, args.invocation)
    return 0 if result["diverged_at"] is None else 2


def cmd_selfcheck(args):
    from experiments import selfcheck
    from replication.startup import start_replicator
    plan = selfcheck.Plan(precision=args.precision, fault=args.inject_fault,
                          jit_compile=selfcheck.JIT_CHOICES[args.jit_compile])
    return selfcheck.main(start_replicator(args.replicator), plan)


def _run_args(p, out_help: str | None = None):
    p.add_argument("--run", required=True, help="a point directory (holds config.json)")
    if out_help:
        p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--step", type=_ints(1), help="a kept checkpoint's (the final generator)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m experiments", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sweep", help="the batch-size study (default: CPU-sized Fashion-MNIST)",
                       description="Train and score one SN-GAN per (batch size, seed), skipping "
                       "finished points and resuming unfinished ones, then write the report.")
    _add_config_args(p, batch_flag=False)
    p.add_argument("--sweep", help="a named sweep of the preset's SWEEPS (default: its first)")
    p.add_argument("--batch-sizes", type=_ints(1, many=True), help="e.g. 8,64,512")
    p.add_argument("--seeds", type=_ints(0, many=True), help="e.g. 0,1,2")
    p.add_argument("--lr-scaling", choices=config_lib.LR_SCALING, help="vs batch 64 (none)")
    p.add_argument("--budget", choices=config_lib.BUDGET_MODES, help="(equal_steps)")
    p.add_argument("--arm", help="a further comparison in --out: points bsBBBB_seedS_ARM")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output directory ({DEFAULT_OUT})")
    p.add_argument("--dry-run", action="store_true",
                   help="print the points and their time estimated here, then exit")
    p.add_argument("--no-calibration", dest="calibrate", action="store_false",
                   help="no calibration steps: the ETA comes from finished points alone")
    p.add_argument("--start-over", action="store_true",
                   help="delete --out's points/, report/ and sweep files first")
    p.add_argument("--no-report", dest="report", action="store_false",
                   help="leave the report as it is (`python -m experiments report` writes it)")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("train", help="train and score one configuration")
    _add_config_args(p)
    p.add_argument("--out", help="run directory (default runs/PRESET_bsB)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="re-score a finished point (into its metrics.json)")
    p.add_argument("--run", required=True, help="run directory (holds config.json)")
    p.add_argument("--protocol", choices=sorted(config_lib.EVAL_PROTOCOLS))
    p.add_argument("--bn-mode", choices=config_lib.BN_MODES)
    p.add_argument("--replicator", help="override the run's replicator spec")
    p.add_argument("--classifier", choices=config_lib.CLASSIFIERS,
                   help="score with this extractor (the run's); another one's scores are kept "
                        "under 'protocol/bn_mode/EXTRACTOR'")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("sample", help="draw samples from a point's generator (grid or arrays)")
    _run_args(p, "FILE.png|.pdf (a grid) or FILE.npz (arrays)")
    p.add_argument("--classes", type=_ints(0, many=True), default=(), help="(every class)")
    p.add_argument("--n", type=_ints(1), default=8, help="samples per class (8)")
    p.add_argument("--seed", type=_ints(0), default=0, help="latent seed (0)")
    p.add_argument("--bn-mode", choices=config_lib.BN_MODES, help="(the run's eval.bn_mode)")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("export", help="export a point's generator as a TF SavedModel")
    _run_args(p, "new directory for the SavedModel")
    p.add_argument("--bn-mode", choices=config_lib.BN_MODES, default="standing")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("report", help="tables, plots and figures for a sweep directory")
    p.add_argument("dir")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("reference-stats", help="precompute cached real-data features")
    _add_config_args(p)
    p.add_argument("--cache-dir")
    p.set_defaults(func=cmd_reference_stats)

    p = sub.add_parser("robustness", help="CAS and the memorisation check of finished points "
                       "(into their metrics.json; cached points are skipped)")
    p.add_argument("--run", nargs="+", required=True, help="point directories")
    p.add_argument("--cas", action="store_true", help="only CAS (default: both)")
    p.add_argument("--memorisation", action="store_true", help="only memorisation")
    p.add_argument("--classifier", choices=config_lib.CLASSIFIERS,
                   help="the extractor of the memorisation features (the point's); another "
                        "one also scores the protocol's metrics")
    p.add_argument("--cache-dir", help="real-data cache (that of reference-stats)")
    p.set_defaults(func=cmd_robustness)

    p = sub.add_parser("real-row", help="every metric with real training images in the "
                       "generator's place: the ceilings of the tables (cached)")
    _add_config_args(p)
    p.add_argument("--cache-dir", help="(that of reference-stats)")
    p.add_argument("--out", help="also write the row here (SWEEP/real_rows/NAME.json: the "
                   "report's robustness section shows it)")
    p.set_defaults(func=cmd_real_row)

    p = sub.add_parser("prepare-data", help="check or prepare a dataset")
    _add_config_args(p)
    p.add_argument("--allow-download", action="store_true", help="let TFDS download it")
    p.set_defaults(func=cmd_prepare_data)

    p = sub.add_parser("train-classifier", help="train a shipped Fashion-MNIST classifier")
    p.add_argument("--classifier", choices=config_lib.FASHION_MNIST_CLASSIFIERS,
                   default="fashion_mnist_classifier", help="which one (%(default)s)")
    p.add_argument("--out", default=None, help="weights path (default: the shipped asset)")
    p.add_argument("--epochs", type=_ints(1), help="(the shipped classifier's)")
    p.add_argument("--seed", type=_ints(0), help="(the shipped classifier's: 0, resnet 1)")
    p.set_defaults(func=cmd_train_classifier)

    p = sub.add_parser("noise-scale", help="which batch size to buy: a short run's gradient "
                       "noise scale and the critical batch it predicts (no sweep)")
    _add_config_args(p)
    p.add_argument("--out", help="run directory, kept and resumable (default: a temporary one)")
    p.add_argument("--save", metavar="FILE.json", help="also write the result and the command")
    p.set_defaults(func=cmd_noise_scale)

    from experiments import selfcheck  # no TensorFlow at import
    p = sub.add_parser("selfcheck", help="before a study: check replicas, precision, XLA and "
                       "checkpoints on this hardware (a minute; exit status 1 on a failure)",
                       description=selfcheck.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replicator", default="auto",
                   help="the spec the study will use: cpu:N, gpu, gpu:N, tpu[:ADDRESS], "
                        "multiworker, slurm[:...], auto (default)")
    p.add_argument("--precision", choices=selfcheck.PRECISION_CHOICES,
                   help="the run's precision (default: bfloat16 on TPU and CPU, mixed_float16 "
                        "on GPU, which this suite does not offer: then float32)")
    p.add_argument("--jit-compile", choices=tuple(selfcheck.JIT_CHOICES), default="auto",
                   help="train.jit_compile as the run will set it (auto)")
    p.add_argument("--inject-fault", choices=selfcheck.FAULTS,
                   help="make a check fail on purpose, to see that it can")
    p.set_defaults(func=cmd_selfcheck)
    return parser


def main(argv=None) -> int:
    logs.setup()
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.invocation = "python -m experiments " + shlex.join(argv)  # for lock files, results
    try:
        return args.func(args)
    except UserError as e:  # what went wrong and what to do, in one line; no traceback
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except Preempted as e:  # checkpointed at one step on every worker; rerun to resume
        print(f"{e} (exit status {PREEMPTED_EXIT_CODE})", file=sys.stderr)
        return PREEMPTED_EXIT_CODE
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
