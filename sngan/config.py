"""The model library's configs: the model to build and how to train it, frozen dataclasses
validated on construction, without TensorFlow (the command line checks them before it starts).

`experiments.config.RunConfig` composes them with the study's data and evaluation sections;
the model library's own tests build them directly.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from common.errors import UserError
from replication.specs import SpecError, parse_spec
from sngan.options import LOSSES, PRECISIONS, REFUSED_PRECISIONS, RESOLUTIONS


class ConfigError(UserError, ValueError):
    """A configuration value is invalid; the message names the field and what is allowed."""


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise ConfigError(msg)


def check_choice(value, allowed, name) -> None:
    check(value in allowed, f"{name}={value!r} is not one of {list(allowed)}")


def replicas_in_spec(spec: str) -> int | None:
    """Replica count a replicator spec promises, or None if only known at run time."""
    try:
        return parse_spec(spec).replicas
    except SpecError as e:
        raise ConfigError(f"train.replicator: {e}") from None


@dataclass(frozen=True)
class ModelConfig:
    resolution: int = 32
    image_channels: int = 1
    num_classes: int = 10  # 0 = unconditional
    z_dim: int = 128
    g_ch: int = 32
    d_ch: int = 32
    bn_cross_replica: bool = True  # False = per-replica BN statistics (the ablation)
    g_bn_momentum: float = 0.99

    def __post_init__(self):
        check_choice(self.resolution, RESOLUTIONS, "model.resolution")
        check_choice(self.image_channels, (1, 3), "model.image_channels")
        check(self.num_classes >= 0, "model.num_classes must be >= 0 (0 = unconditional)")
        check(self.z_dim >= 1, "model.z_dim must be >= 1")
        check(self.g_ch >= 1 and self.d_ch >= 1, "model.g_ch and model.d_ch must be >= 1")
        check(0.0 <= self.g_bn_momentum < 1.0, "model.g_bn_momentum must be in [0, 1)")


@dataclass(frozen=True)
class TrainConfig:
    global_batch_size: int = 64
    steps: int = 1000  # generator updates
    n_dis: int = 5
    loss: str = "hinge"
    g_lr: float = 2e-4
    d_lr: float = 2e-4
    beta1: float = 0.0
    beta2: float = 0.9
    lr_decay_start: int | None = None  # linear decay to 0 from this step to `steps`
    ema_decay: float | None = None  # EMA of generator weights, e.g. 0.9999
    grad_accumulation: int = 1  # micro-batches per optimizer update
    # The G update draws this many times the global batch (sngan_projection: n_gen_samples
    # = 2 x the D batch, 128 vs 64 on CIFAR-10; mimicry, BigGAN-PyTorch, compare_gan: 1).
    g_batch_multiplier: int = 1
    replicator: str = "default"
    # None (auto): off on CPU (slower there); tried on GPU/TPU, where the trainer falls back
    # without XLA if the step does not compile. Point records keep the mode that ran.
    jit_compile: bool | None = None
    seed: int = 0
    checkpoint_every: int = 500
    summary_every: int = 50
    log_every: int = 50
    keep_checkpoints: int = 2
    # Measure the gradient noise scale B_simple for D and G every N steps (sngan/noise_scale.py;
    # 0 = off). The default keeps the step's overhead small (docs/benchmarks.md).
    noise_scale_every: int = 25
    # float32, or bfloat16 convolutions/matmuls with float32 variables, statistics, losses and
    # gradients, as a TPU computes (sngan/precision.py). bfloat16 is refused on a CPU without
    # native bf16 instructions unless precision_emulated_ok (it would be slower than float32).
    precision: str = "float32"
    precision_emulated_ok: bool = False
    # End the run at the first evaluation meeting this condition, e.g. 'is_mean>=7.5' or
    # 'fid<=50' (None: run to `steps`): a time-to-target run needs only the steps that pass
    # its highest target. Needs eval.every; the record keeps the step (PointRecord.stopped_at).
    stop_at: str | None = None
    # Resume a checkpoint under another environment (commit, packages, CPU; environment.py)
    # and keep both in the record, instead of refusing: a permission, not a setting.
    environment_change_ok: bool = False

    def __post_init__(self):
        check(self.global_batch_size > 0, "train.global_batch_size must be > 0")
        check(self.steps > 0, "train.steps must be > 0")
        check(self.n_dis >= 1, "train.n_dis must be >= 1")
        check_choice(self.loss, LOSSES, "train.loss")
        check(self.g_lr > 0 and self.d_lr > 0, "learning rates must be > 0")
        check(0 <= self.beta1 < 1 and 0 <= self.beta2 < 1, "Adam betas must be in [0, 1)")
        if self.lr_decay_start is not None:
            check(0 <= self.lr_decay_start < self.steps,
                  "train.lr_decay_start must be in [0, steps)")
        if self.ema_decay is not None:
            check(0 < self.ema_decay < 1, "train.ema_decay must be in (0, 1)")
        check(self.grad_accumulation >= 1, "train.grad_accumulation must be >= 1")
        check(self.g_batch_multiplier >= 1, "train.g_batch_multiplier must be >= 1")
        check(self.checkpoint_every >= 1, "train.checkpoint_every must be >= 1")
        check(self.keep_checkpoints >= 1, "train.keep_checkpoints must be >= 1")
        check(self.noise_scale_every >= 0, "train.noise_scale_every must be >= 0 (0 = off)")
        check(self.precision not in REFUSED_PRECISIONS,
              f"train.precision={self.precision!r} is not offered: "
              f"{REFUSED_PRECISIONS.get(self.precision)}")
        check_choice(self.precision, PRECISIONS, "train.precision")
        if self.stop_at is not None:
            parse_stop_at(self.stop_at)
        replicas = replicas_in_spec(self.replicator)
        # one device, no accumulation: the noise scale halves the batch (sngan/gradient_noise.py)
        check(not (self.noise_scale_every and replicas == 1 and self.grad_accumulation == 1
                   and self.global_batch_size % 2),
              f"train.noise_scale_every={self.noise_scale_every} on one device halves the batch, "
              f"so train.global_batch_size={self.global_batch_size} must be even; use an even "
              "batch or train.noise_scale_every=0")
        spec = parse_spec(self.replicator)
        check(not (self.jit_compile and spec.kind == "cpu" and (replicas or 1) > 1),
              f"train.jit_compile=true with '{self.replicator}' ({replicas} CPU replicas): XLA "
              "cannot compile the replicated step on CPU devices (TensorFlow refuses to read "
              "a replica's variables from another CPU device); set train.jit_compile=null "
              "(auto: off on CPU) or use one replica")
        micro = self.global_batch_size // self.grad_accumulation
        check(self.global_batch_size % self.grad_accumulation == 0,
              f"train.global_batch_size={self.global_batch_size} is not divisible by "
              f"train.grad_accumulation={self.grad_accumulation}")
        if replicas is not None:
            check(micro % replicas == 0,
                  f"global batch {self.global_batch_size} (micro-batch {micro}) is not "
                  f"divisible by the {replicas} replicas of '{self.replicator}': every "
                  f"replica takes an equal share; use a multiple of {replicas} or another "
                  "replicator")


# the scores a run may stop at, and which way is better (stop_at uses >= or <=)
STOP_METRICS = {"is_mean": ">=", "accuracy": ">=", "precision": ">=", "recall": ">=",
                "density": ">=", "coverage": ">=", "fid": "<=", "kid_mean": "<=",
                "intra_fid": "<="}
_STOP_AT = re.compile(r"\s*([a-z_]+)\s*(>=|<=)\s*([-+0-9.eE]+)\s*")


def parse_stop_at(text: str) -> tuple[str, str, float]:
    """'is_mean>=7.5' -> ('is_mean', '>=', 7.5); a clear error for anything else."""
    m = _STOP_AT.fullmatch(text) if isinstance(text, str) else None
    check(m is not None, f"train.stop_at={text!r}: write METRIC>=VALUE or METRIC<=VALUE, "
                         f"e.g. 'is_mean>=7.5' (metrics: {', '.join(sorted(STOP_METRICS))})")
    metric, op, raw = m.groups()
    check_choice(metric, sorted(STOP_METRICS), "train.stop_at's metric")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    check(math.isfinite(value), f"train.stop_at={text!r}: {raw!r} is not a number")
    check(op == STOP_METRICS[metric],
          f"train.stop_at={text!r}: {metric} improves the other way; use "
          f"{metric}{STOP_METRICS[metric]}{raw}")
    return metric, op, value
