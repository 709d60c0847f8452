"""python -m experiments selfcheck: is data parallelism right on THIS hardware, before a study?

The tests check the replicated step on `cpu:N` stand-ins; a GPU or TPU user learns whether
cross-replica batch norm, the all-reduce, the run's precision, checkpoints and XLA work on
their devices only after hours of training. This runs the same comparisons on the devices a
replicator finds, in about a minute, with the tests' tolerances (the code is shared:
replication/equivalence.py, sngan/equivalence.py):

  float32 equivalence   the tiny batch-norm model of replication/equivalence.py, R replicas x b
                        against one replica x Rb on one device of the same kind: batch-norm
                        statistics, losses, first-step gradients, updated weights after 5 steps
                        (atol = rtol = 2e-5; TensorFloat-32 off while it runs)
  <precision> GAN step  a small SN-GAN (GANTrainer), 2 steps of R replicas against one replica
                        in the run's precision: D's and G's losses (bfloat16: 0.02 + 3%)
  XLA                   those steps ran with train.jit_compile as the run sets it (auto: tried
                        on GPU/TPU, falling back without it if the step does not compile)
  checkpoint            the newest checkpoint restores every variable and the step written

Every check prints one verdict line (PASS/FAIL/SKIP, the measured number and its tolerance),
then a summary to paste into an issue; the exit status is 1 if any check failed. A
multi-worker replicator runs it in every worker, as training does (`python -m replication.launch
--workers 2 -- python -m experiments selfcheck --replicator multiworker` on one machine).

`inject_fault` makes one check fail on purpose, to see that it can: "per_replica_bn" (batch
norm over each replica's share: the float32 and GAN-step checks), "per_replica_loss" (losses
divided by the per-replica batch: the float32 check) or "checkpoint" (the newest checkpoint's
data truncated after writing: it restores an older step's weights).
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time

from experiments import environment

FAULTS = ("per_replica_bn", "per_replica_loss", "checkpoint")
PRECISION_CHOICES = ("float32", "bfloat16", "mixed_float16")
JIT_CHOICES = {"auto": None, "on": True, "off": False}
GAN_STEPS = 2
PER_REPLICA_BATCH = 8  # global batch 8 for up to 4 replicas; at least 2 rows a replica


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One check's outcome: PASS, FAIL or SKIP (not applicable here, with the reason)."""
    status: str
    check: str
    detail: str

    def __post_init__(self):
        if self.status not in ("PASS", "FAIL", "SKIP"):
            raise ValueError(f"verdict status {self.status!r} is not PASS, FAIL or SKIP")

    def line(self) -> str:
        return f"{self.status}  {self.check:<34} {self.detail}"


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the self-check runs: the run's precision as asked (None: the device's usual one),
    the XLA mode (None = auto) and at most one injected fault."""
    precision: str | None = None
    jit_compile: bool | None = None
    fault: str | None = None

    def __post_init__(self):
        if self.precision not in (None, *PRECISION_CHOICES):
            raise ValueError(f"precision {self.precision!r}: use one of {PRECISION_CHOICES}")
        if self.fault not in (None, *FAULTS):
            raise ValueError(f"fault {self.fault!r}: use one of {FAULTS}")


def global_batch(num_replicas: int) -> int:
    """8 rows for 1, 2 or 4 replicas (as the tests); 2 a replica beyond."""
    return num_replicas * max(2, PER_REPLICA_BATCH // num_replicas)


def run_precision(device_kind: str, asked: str | None) -> tuple[str, str | None]:
    """(the precision the trainer checks run in, why another than asked or None).

    Unasked, a TPU and a CPU run bfloat16 (a TPU's native precision; the study's v4 arm), a
    GPU mixed float16, which this suite refuses (sngan/options.py): then float32."""
    from sngan.options import REFUSED_PRECISIONS
    wanted = asked or ("mixed_float16" if device_kind == "GPU" else "bfloat16")
    if wanted in REFUSED_PRECISIONS:
        return "float32", f"{wanted} is not offered by this suite: {REFUSED_PRECISIONS[wanted]}"
    return wanted, None


def devices_of(replicator) -> list[str]:
    """The devices of this worker's replicas (TensorFlow's default device for 'default')."""
    try:
        return [str(d) for d in replicator.strategy.extended.worker_devices]
    except (AttributeError, RuntimeError, ValueError):
        import tensorflow as tf
        kind = replicator.device_kind
        return [d.name for d in tf.config.list_logical_devices(kind)][:1]


# -- the checks ------------------------------------------------------------------------------
def float32_equivalence(replicator, plan: Plan) -> list[Verdict]:
    """replication/equivalence.py on `replicator` against one device, TensorFloat-32 off."""
    import tensorflow as tf

    from replication import equivalence, make_replicator
    batch = global_batch(replicator.num_replicas)
    ref_spec = equivalence.reference_spec(replicator)
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        run = equivalence.train(
            replicator, synchronized=plan.fault != "per_replica_bn", global_batch=batch,
            loss_divisor=(replicator.per_replica_batch(batch)
                          if plan.fault == "per_replica_loss" else None))
        reference = equivalence.train(make_replicator(ref_spec), global_batch=batch)
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
    shape = (f"{replicator.num_replicas}x{batch // replicator.num_replicas} vs "
             f"{ref_spec} 1x{batch}")
    allowed = f"{equivalence.ATOL:g} + {equivalence.RTOL:g}|ref|"
    return [Verdict("PASS" if gap.ok else "FAIL", f"float32 {name}",
                    f"{shape}: max |diff| {gap.max_abs:.2e}, {gap.excess:.3g}x the allowed "
                    f"{allowed}")
            for name, gap in equivalence.compare(run, reference).items()]


def _train_config(replicator, precision: str, jit_compile, steps: int):
    from experiments.config import TrainConfig
    return TrainConfig(global_batch_size=global_batch(replicator.num_replicas), steps=steps,
                       n_dis=2, replicator=replicator.spec, jit_compile=jit_compile,
                       checkpoint_every=1, summary_every=10 ** 6, log_every=10 ** 6,
                       noise_scale_every=0,
                       precision=precision, precision_emulated_ok=True)


def _model_config(cross_replica: bool = True):
    from experiments.config import ModelConfig
    return ModelConfig(z_dim=16, g_ch=16, d_ch=16, bn_cross_replica=cross_replica)


def trainer_checks(replicator, plan: Plan, precision: str, workdir: str) -> list[Verdict]:
    """The GAN step in `precision` against one replica, XLA as the run sets it, and a
    checkpoint round trip, from one trainer on `replicator`."""
    from replication import equivalence as replica_equivalence
    from replication import make_replicator
    from sngan import equivalence, training
    from sngan.training import GANTrainer
    batch = global_batch(replicator.num_replicas)
    data = equivalence.synthetic_input_fn(batch)
    cfg = _train_config(replicator, precision, plan.jit_compile, GAN_STEPS)
    model = _model_config(cross_replica=plan.fault != "per_replica_bn")
    out = []

    trainer = GANTrainer(model, cfg, replicator, data, f"{workdir}/replicated")
    attempted = trainer.jit_compile
    metrics = []
    for _ in range(GAN_STEPS):
        metrics.append(trainer.step())
        trainer.save()
    written = equivalence.trainer_state(trainer)
    finite = all(m.pop("weights_finite") == 1.0 for m in metrics)

    ref_spec = replica_equivalence.reference_spec(replicator)
    one = make_replicator(ref_spec)
    reference = GANTrainer(_model_config(), _train_config(one, precision, plan.jit_compile,
                                                          GAN_STEPS),
                           one, data, f"{workdir}/reference")
    ref_metrics = [reference.step() for _ in range(GAN_STEPS)]
    agree, gap = equivalence.losses_agree(metrics, ref_metrics, precision)
    rtol, atol = equivalence.loss_tolerance(precision)
    out.append(Verdict(
        "PASS" if agree else "FAIL", f"{precision} GAN step losses",
        f"{replicator.num_replicas}x{batch // replicator.num_replicas} vs {ref_spec} 1x{batch}, "
        f"{GAN_STEPS} steps: max |diff| {gap:.2e} (allowed {atol:g} + {rtol:g}|ref|)"))

    mode = {None: "auto", True: "on", False: "off"}[plan.jit_compile]
    if plan.jit_compile is None and replicator.device_kind not in training.XLA_AUTO_DEVICE_KINDS:
        how = (f"auto: off on {replicator.device_kind} (tried on "
               f"{', '.join(training.XLA_AUTO_DEVICE_KINDS)})")
    elif attempted and not trainer.jit_compile:
        how = f"{mode}: XLA did not compile here; the steps ran without it, as a run would"
    else:
        how = f"{mode}: XLA {'on' if trainer.jit_compile else 'off'}"
    out.append(Verdict("PASS" if finite else "FAIL", "XLA as the run sets it",
                       f"{how}; {GAN_STEPS} steps, weights "
                       f"{'finite' if finite else 'NOT finite'}"))

    if plan.fault == "checkpoint":
        equivalence.damage(trainer.manager.latest_checkpoint)
    restored = GANTrainer(model, cfg, replicator, data, f"{workdir}/replicated")
    excess, where = equivalence.state_gap(equivalence.trainer_state(restored), written)
    out.append(Verdict(
        "PASS" if excess <= 1.0 else "FAIL", "checkpoint restores what it wrote",
        f"step {restored.restored_step} of {GAN_STEPS} restored, {len(written)} variables: "
        f"{excess:.3g}x the allowed {equivalence.STATE_ATOL:g} + {equivalence.STATE_RTOL:g}"
        f"|written|" + (f" (worst: {where})" if excess > 1.0 else "")))
    return out


def _guarded(name: str, check, *args) -> list[Verdict]:
    """A check's verdicts, or one FAIL naming the error it raised."""
    try:
        return check(*args)
    except Exception as e:  # noqa: BLE001  (any failure of a check is its verdict)
        reason = " ".join(str(e).split())[:300]
        return [Verdict("FAIL", name, f"raised {type(e).__name__}: {reason}")]


def run(replicator, plan: Plan = Plan(), say=print) -> list[Verdict]:
    """Every check on `replicator`, each verdict printed by `say` as it comes; returns them."""
    from sngan import precision as precisions
    kind = replicator.device_kind
    precision, refused = run_precision(kind, plan.precision)
    emulated = precisions.hardware_problem(precision, kind) is not None
    say(f"replicator {replicator.spec}: {replicator.num_replicas} replica(s) on "
        f"{replicator.num_workers} worker(s), this is worker {replicator.worker_index}; "
        f"{kind} devices here: {', '.join(devices_of(replicator))}")
    say(f"precision: float32, and the run's {plan.precision or 'usual'} precision on {kind}: "
        f"{precision}" + (" (emulated: this CPU lacks AVX512_BF16 and AMX)" if emulated else "")
        + (f"; plan.fault={plan.fault} (injected on purpose)" if plan.fault else ""))
    verdicts = []

    def add(items):
        for v in items:
            say(v.line())
        verdicts.extend(items)

    if replicator.num_replicas == 1:
        add([Verdict("SKIP", "cross-replica equivalence", "one replica: nothing to compare "
                     "(use the replicator a run would, e.g. gpu:8, tpu, cpu:2)")])
    else:
        add(_guarded("float32 equivalence", float32_equivalence, replicator, plan))
    if refused:
        asked = plan.precision is not None
        add([Verdict("FAIL" if asked else "SKIP", f"{plan.precision or 'mixed_float16'} "
                     "GAN step", refused + "; the trainer checks below run in float32")])
    workdir = tempfile.mkdtemp(prefix="sngan_selfcheck_")
    try:
        add(_guarded(f"{precision} GAN step, XLA, checkpoint", trainer_checks, replicator,
                     plan, precision, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return verdicts


def summary(replicator, verdicts: list[Verdict], plan: Plan, seconds: float) -> str:
    """What to paste into an issue: the suite, the stack, the devices, the result."""
    env = environment.current(devices_of(replicator), replicator.spec)
    counts = {s: sum(v.status == s for v in verdicts) for s in ("PASS", "FAIL", "SKIP")}
    precision, _ = run_precision(replicator.device_kind, plan.precision)
    commit = (env.suite_commit or "not a git checkout")[:12]
    dirty = {True: " (uncommitted changes)", False: "", None: ""}[env.suite_dirty]
    packages = ", ".join(f"{k} {v}" for k, v in env.packages.items())
    xla = {None: "auto", True: "on", False: "off"}[plan.jit_compile]
    lines = [
        "```",
        "python -m experiments selfcheck: "
        + ("FAILED" if counts["FAIL"] else "passed")
        + f" ({counts['PASS']} pass, {counts['FAIL']} fail, {counts['SKIP']} skip; "
          f"{seconds:.0f} s)",
        f"suite commit: {commit}{dirty}",
        f"stack: {environment.describe(env)}; Python {env.python}; {packages}",
        f"replicator: {replicator.spec}, {replicator.num_replicas} replica(s), "
        f"{replicator.num_workers} worker(s) (worker {replicator.worker_index})",
        f"devices: {', '.join(env.devices)}",
        f"precision: float32 and {precision}; XLA {xla}"
        + (f"; injected fault: {plan.fault}" if plan.fault else ""),
        *[v.line() for v in verdicts if v.status != "PASS"],
        "```",
    ]
    return "\n".join(lines)


def main(replicator, plan: Plan = Plan(), say=print) -> int:
    """Run, print the summary; 1 if any check failed, else 0."""
    start = time.perf_counter()
    verdicts = run(replicator, plan, say)
    say(summary(replicator, verdicts, plan, time.perf_counter() - start))
    return 1 if any(v.status == "FAIL" for v in verdicts) else 0
