"""The schema of a run and of a sweep: frozen dataclasses validated on construction,
command-line overrides, JSON round trip. The experiments themselves (their settings and sweep
axes) are the files in experiments/configs/.

Every run saves the exact `RunConfig` it ran with (``config.json``), so a table row can
always be traced back to its settings, and a resumed run can refuse a changed config.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
from dataclasses import dataclass, field

from common.dataclass_json import from_dict
from common.errors import UserError
from replication.specs import SpecError, parse_spec
from sngan.options import BN_MODES, LOSSES, PRECISIONS, REFUSED_PRECISIONS

# Static facts about the datasets we know: (num_classes, image channels, native resolution).
# `image_folder` takes its classes from the folder and its channels from the config.
DATASETS: dict[str, tuple[int | None, int, int | None]] = {
    "fashion_mnist": (10, 1, 28),
    "cifar10": (10, 3, 32),
    "imagenet2012": (1000, 3, None),
    "imagenet_resized/32x32": (1000, 3, 32),
    "imagenet_resized/64x64": (1000, 3, 64),
    "image_folder": (None, 3, None),
}
RESOLUTIONS = (32, 64, 128)
DATA_SOURCES = ("auto", "idx", "tfds", "folder")
RESIZE_METHODS = ("pad", "resize", "resize_shorter_center_crop")
CLASSIFIERS = ("fashion_mnist_classifier", "inception")
LR_SCALING = ("none", "linear", "sqrt")
BUDGET_MODES = ("equal_steps", "equal_images")
BASELINE_BATCH = 64  # the paper's "64 -> 512" comparison; lr scaling and budgets are relative to it

# name -> (num_fake, num_real, reference split, IS splits)
EVAL_PROTOCOLS: dict[str, tuple[int, int, str, int]] = {
    "fast": (5_000, 10_000, "test", 10),
    "standard": (50_000, 50_000, "train", 10),
    "tiny": (500, 1_000, "test", 5),
}
# sngan_projection scores CIFAR-10 with 5,000 samples against the 10,000 test images: the
# "fast" counts under the name its records carry.
EVAL_PROTOCOLS["sngan_paper"] = EVAL_PROTOCOLS["fast"]


class ConfigError(UserError, ValueError):
    """A configuration value is invalid; the message names the field and what is allowed."""


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ConfigError(msg)


def _choice(value, allowed, name) -> None:
    _check(value in allowed, f"{name}={value!r} is not one of {list(allowed)}")


def kid_block_size(num_a: int, num_b: int, subsets: int) -> int:
    """Samples per block of KID's block estimator (experiments.evaluation.metrics
    .kernel_distance, TF-GAN's max_block_size): ceil(max(n_a, n_b) / subsets)."""
    return -(-max(num_a, num_b) // subsets)


def kid_blocks_fit(num_a: int, num_b: int, subsets: int) -> bool:
    """Whether KID's block estimator can use `subsets` blocks: each block needs >= 2 samples
    of each set (its unbiased MMD divides by m(m-1)). Checked by the config and the metric."""
    blocks = -(-max(num_a, num_b) // kid_block_size(num_a, num_b, subsets))
    return min(num_a, num_b) >= 2 * blocks


def max_kid_subsets(num_a: int, num_b: int) -> int:
    return max((s for s in range(1, min(num_a, num_b) // 2 + 1)
                if kid_blocks_fit(num_a, num_b, s)), default=0)


def replicas_in_spec(spec: str) -> int | None:
    """Replica count a replicator spec promises, or None if only known at run time."""
    try:
        return parse_spec(spec).replicas
    except SpecError as e:
        raise ConfigError(f"train.replicator: {e}") from None


@dataclass(frozen=True)
class DataConfig:
    name: str = "fashion_mnist"
    resolution: int = 32
    source: str = "auto"  # idx | tfds | folder; auto: the dataset's usual one (data/sources.py)
    data_dir: str | None = None  # IDX dir, TFDS data_dir, or image-folder root
    manual_dir: str | None = None  # TFDS manual download dir (imagenet2012)
    resize_method: str = "pad"  # how native images reach `resolution`
    shuffle_buffer: int = 10_000
    train_split: str = "train"
    num_classes: int | None = None  # only for image_folder; else taken from DATASETS

    def __post_init__(self):
        _choice(self.name, DATASETS, "data.name")
        _choice(self.resolution, RESOLUTIONS, "data.resolution")
        _choice(self.resize_method, RESIZE_METHODS, "data.resize_method")
        _check(self.shuffle_buffer >= 1, "data.shuffle_buffer must be >= 1")
        _choice(self.source, DATA_SOURCES, "data.source")
        if self.source == "idx":
            _check(self.name == "fashion_mnist", "data.source='idx' reads Fashion-MNIST's IDX "
                   f"files only; {self.name} comes from 'tfds' or 'folder'")
        _check((self.source == "folder") == (self.name == "image_folder")
               or self.source == "auto",
               "data.source='folder' goes with data.name='image_folder' and only with it")
        if self.name == "image_folder":
            _check(self.data_dir is not None, "data.data_dir is required for image_folder")

    @property
    def classes(self) -> int | None:
        return DATASETS[self.name][0] if self.name != "image_folder" else self.num_classes

    @property
    def channels(self) -> int:
        return DATASETS[self.name][1]


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
        _choice(self.resolution, RESOLUTIONS, "model.resolution")
        _choice(self.image_channels, (1, 3), "model.image_channels")
        _check(self.num_classes >= 0, "model.num_classes must be >= 0 (0 = unconditional)")
        _check(self.z_dim >= 1, "model.z_dim must be >= 1")
        _check(self.g_ch >= 1 and self.d_ch >= 1, "model.g_ch and model.d_ch must be >= 1")
        _check(0.0 <= self.g_bn_momentum < 1.0, "model.g_bn_momentum must be in [0, 1)")


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
        _check(self.global_batch_size > 0, "train.global_batch_size must be > 0")
        _check(self.steps > 0, "train.steps must be > 0")
        _check(self.n_dis >= 1, "train.n_dis must be >= 1")
        _choice(self.loss, LOSSES, "train.loss")
        _check(self.g_lr > 0 and self.d_lr > 0, "learning rates must be > 0")
        _check(0 <= self.beta1 < 1 and 0 <= self.beta2 < 1, "Adam betas must be in [0, 1)")
        if self.lr_decay_start is not None:
            _check(0 <= self.lr_decay_start < self.steps,
                   "train.lr_decay_start must be in [0, steps)")
        if self.ema_decay is not None:
            _check(0 < self.ema_decay < 1, "train.ema_decay must be in (0, 1)")
        _check(self.grad_accumulation >= 1, "train.grad_accumulation must be >= 1")
        _check(self.g_batch_multiplier >= 1, "train.g_batch_multiplier must be >= 1")
        _check(self.checkpoint_every >= 1, "train.checkpoint_every must be >= 1")
        _check(self.keep_checkpoints >= 1, "train.keep_checkpoints must be >= 1")
        _check(self.noise_scale_every >= 0, "train.noise_scale_every must be >= 0 (0 = off)")
        _check(self.precision not in REFUSED_PRECISIONS,
               f"train.precision={self.precision!r} is not offered: "
               f"{REFUSED_PRECISIONS.get(self.precision)}")
        _choice(self.precision, PRECISIONS, "train.precision")
        if self.stop_at is not None:
            parse_stop_at(self.stop_at)
        replicas = replicas_in_spec(self.replicator)
        # one device, no accumulation: the noise scale halves the batch (sngan/gradient_noise.py)
        _check(not (self.noise_scale_every and replicas == 1 and self.grad_accumulation == 1
                    and self.global_batch_size % 2),
               f"train.noise_scale_every={self.noise_scale_every} on one device halves the batch, "
               f"so train.global_batch_size={self.global_batch_size} must be even; use an even "
               "batch or train.noise_scale_every=0")
        spec = parse_spec(self.replicator)
        _check(not (self.jit_compile and spec.kind == "cpu" and (replicas or 1) > 1),
               f"train.jit_compile=true with '{self.replicator}' ({replicas} CPU replicas): XLA "
               "cannot compile the replicated step on CPU devices (TensorFlow refuses to read "
               "a replica's variables from another CPU device); set train.jit_compile=null "
               "(auto: off on CPU) or use one replica")
        micro = self.global_batch_size // self.grad_accumulation
        _check(self.global_batch_size % self.grad_accumulation == 0,
               f"train.global_batch_size={self.global_batch_size} is not divisible by "
               f"train.grad_accumulation={self.grad_accumulation}")
        if replicas is not None:
            _check(micro % replicas == 0,
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
    _check(m is not None, f"train.stop_at={text!r}: write METRIC>=VALUE or METRIC<=VALUE, "
                          f"e.g. 'is_mean>=7.5' (metrics: {', '.join(sorted(STOP_METRICS))})")
    metric, op, raw = m.groups()
    _choice(metric, sorted(STOP_METRICS), "train.stop_at's metric")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    _check(math.isfinite(value), f"train.stop_at={text!r}: {raw!r} is not a number")
    _check(op == STOP_METRICS[metric],
           f"train.stop_at={text!r}: {metric} improves the other way; use "
           f"{metric}{STOP_METRICS[metric]}{raw}")
    return metric, op, value


def stop_reached(stop_at: str | None, scores) -> bool:
    """Whether `scores` (a records.Scores) meets the run's stop_at condition."""
    if stop_at is None:
        return False
    metric, op, value = parse_stop_at(stop_at)
    got = getattr(scores, metric, None)
    if got is None or not math.isfinite(got):
        return False
    return got >= value if op == ">=" else got <= value


@dataclass(frozen=True)
class EvalConfig:
    classifier: str = "fashion_mnist_classifier"
    inception_path: str | None = None  # local SavedModel dir or TF-Hub handle
    protocol: str = "fast"
    num_fake: int = 5_000
    num_real: int = 10_000
    reference_split: str = "test"
    is_splits: int = 10
    kid_subsets: int = 10
    bn_mode: str = "batch"
    standing_batches: int = 10
    batch_size: int = 512  # global generator batch while sampling (sets BN batch statistics)
    seed: int = 1234
    every: int = 0  # also score every N generator steps during training (0 = only at end)
    # Score the final checkpoint with this many evaluation seeds (seed, seed+1, ...): the
    # evaluation-noise floor, and the interval of a single training seed.
    replicates: int = 1
    sample_class: int = 0  # class shown in the comparison figure

    def __post_init__(self):
        _choice(self.classifier, CLASSIFIERS, "eval.classifier")
        _choice(self.protocol, tuple(EVAL_PROTOCOLS) + ("custom",), "eval.protocol")
        _choice(self.bn_mode, BN_MODES, "eval.bn_mode")
        _check(self.num_fake > 0 and self.num_real > 0, "eval.num_fake/num_real must be > 0")
        _check(self.is_splits >= 1, "eval.is_splits must be >= 1")
        _check(self.num_fake >= self.is_splits, "eval.num_fake must be >= eval.is_splits")
        _check(self.kid_subsets >= 1, "eval.kid_subsets must be >= 1")
        _check(self.standing_batches >= 1,
               f"eval.standing_batches={self.standing_batches}: standing BN statistics are "
               "averaged over that many sampling batches, so it must be >= 1 (e.g. 10)")
        _check(self.batch_size > 0, "eval.batch_size must be > 0")
        _check(self.every >= 0, "eval.every must be >= 0")
        _check(self.replicates >= 1, "eval.replicates must be >= 1 (1 = the final score only)")
        if self.protocol != "custom":
            nf, nr, split, splits = EVAL_PROTOCOLS[self.protocol]
            _check((self.num_fake, self.num_real, self.reference_split, self.is_splits)
                   == (nf, nr, split, splits),
                   f"eval.protocol={self.protocol!r} fixes num_fake={nf}, num_real={nr}, "
                   f"reference_split={split!r}, is_splits={splits}; use protocol='custom' "
                   "to change them")
        _check(kid_blocks_fit(self.num_fake, self.num_real, self.kid_subsets),
               f"eval.kid_subsets={self.kid_subsets} is too many for {self.num_fake} generated "
               f"and {self.num_real} real samples: KID's block estimator needs >= 2 samples of "
               f"each set per subset; use eval.kid_subsets <= "
               f"{max_kid_subsets(self.num_fake, self.num_real)} or more samples")

    @staticmethod
    def for_protocol(protocol: str, **kw) -> EvalConfig:
        _choice(protocol, tuple(EVAL_PROTOCOLS), "eval.protocol")
        nf, nr, split, splits = EVAL_PROTOCOLS[protocol]
        return EvalConfig(protocol=protocol, num_fake=nf, num_real=nr, reference_split=split,
                          is_splits=splits, **kw)


def check_eval_replicas(eval_cfg: EvalConfig, spec: str) -> None:
    """Every replica samples an equal share of each evaluation batch."""
    replicas = replicas_in_spec(spec)
    if replicas is not None:
        _check(eval_cfg.batch_size % replicas == 0,
               f"eval.batch_size={eval_cfg.batch_size} is not divisible by the {replicas} "
               f"replicas of '{spec}': every replica samples an equal share of each batch; "
               f"set eval.batch_size to a multiple of {replicas} or use another replicator")


@dataclass(frozen=True)
class RunConfig:
    preset: str = "fashion_mnist"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self):
        _check(self.model.resolution == self.data.resolution,
               f"model.resolution={self.model.resolution} != data.resolution="
               f"{self.data.resolution}")
        _check(self.model.image_channels == self.data.channels,
               f"model.image_channels={self.model.image_channels} but {self.data.name} "
               f"has {self.data.channels} channel(s)")
        classes = self.data.classes
        if classes is not None and self.model.num_classes not in (0, classes):
            raise ConfigError(f"model.num_classes={self.model.num_classes} but {self.data.name} "
                              f"has {classes} classes (use 0 for unconditional)")
        if self.model.num_classes:
            _check(0 <= self.eval.sample_class < self.model.num_classes,
                   f"eval.sample_class={self.eval.sample_class} outside "
                   f"[0, {self.model.num_classes})")
        check_eval_replicas(self.eval, self.train.replicator)
        _check(self.train.stop_at is None or self.eval.every > 0,
               f"train.stop_at={self.train.stop_at!r} is checked at evaluations during "
               "training; set eval.every (e.g. 100)")
        if self.eval.classifier == "fashion_mnist_classifier":
            _check(self.data.name == "fashion_mnist",
                   "eval.classifier='fashion_mnist_classifier' only scores fashion_mnist; "
                   "use eval.classifier='inception' for other datasets")

    # -- serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        return from_dict(cls, d, ConfigError)

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        return cls.from_dict(json.loads(text))

    def replace(self, **sections) -> RunConfig:
        return dataclasses.replace(self, **sections)

    def with_overrides(self, overrides: typing.Iterable[str] | dict) -> RunConfig:
        """Apply 'section.field=value' overrides (values parsed as JSON, else as strings)."""
        overrides = dict(overrides) if isinstance(overrides, dict) else parse_overrides(overrides)
        d = self.to_dict()
        protocol = overrides.get("eval.protocol")
        if protocol in EVAL_PROTOCOLS:  # a named protocol brings its counts unless overridden
            for k, v in zip(("num_fake", "num_real", "reference_split", "is_splits"),
                            EVAL_PROTOCOLS[protocol]):
                overrides.setdefault("eval." + k, v)
        for key, value in overrides.items():
            parts = key.split(".")
            _check(len(parts) == 2 and parts[0] in d and isinstance(d[parts[0]], dict),
                   f"unknown config key {key!r}; expected one of "
                   f"{sorted(s + '.' + f for s in d if isinstance(d[s], dict) for f in d[s])}")
            section, name = parts
            _check(name in d[section], f"unknown config key {key!r}; {section} has "
                                       f"{sorted(d[section])}")
            d[section][name] = value
        return RunConfig.from_dict(d)


ARM_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")


@dataclass(frozen=True)
class SweepAxes:
    """What a sweep varies over its run config: one point per (batch size, seed).

    `steps`, `lr_decay_start` and `eval_every`, when set, replace the run config's (under
    `equal_images` they are the batch-64 point's; experiments/running/sweep.py scales them).
    `arm` names a further comparison kept in the same directory as the main one (arm ''):
    its points are named bsBBBB_seedS_ARM, so they never collide with the main arm's.
    `settings`: further run-config overrides of the arm, as (section.field, value) pairs,
    e.g. (("train.precision", "bfloat16"),).
    `steps_by_batch`: ((batch, steps), ...), each batch size's own number of G steps (for
    time-to-target runs, where a small batch needs more steps to reach a score); then
    `eval.every` is a fixed cadence in steps, the same for every batch size.
    """
    batch_sizes: tuple[int, ...]
    seeds: tuple[int, ...] = (0,)
    lr_scaling: str = "none"
    budget: str = "equal_steps"
    arm: str = ""
    steps: int | None = None
    lr_decay_start: int | None = None
    eval_every: int | None = None
    settings: tuple[tuple[str, typing.Any], ...] = ()
    steps_by_batch: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        _check(len(self.batch_sizes) > 0 and all(b > 0 for b in self.batch_sizes),
               f"sweep batch sizes must be positive, got {self.batch_sizes}")
        _check(len(self.seeds) > 0 and all(s >= 0 for s in self.seeds),
               f"a sweep needs seeds >= 0, got {self.seeds}")
        for name, values in (("batch sizes", self.batch_sizes), ("seeds", self.seeds)):
            _check(len(set(values)) == len(values), f"repeated sweep {name}: {values}")
        _choice(self.lr_scaling, LR_SCALING, "lr_scaling")
        _choice(self.budget, BUDGET_MODES, "budget")
        _check(self.arm == "" or ARM_NAME.fullmatch(self.arm) is not None,
               f"arm={self.arm!r}: use lower-case letters, digits and '_' (it ends point "
               "names)")
        _check(self.steps is None or self.steps >= 1, "sweep steps must be >= 1")
        _check(self.eval_every is None or self.eval_every >= 0, "sweep eval_every must be >= 0")
        _check(all(isinstance(kv, tuple) and len(kv) == 2 and "." in str(kv[0])
                   for kv in self.settings),
               f"sweep settings must be (section.field, value) pairs, got {self.settings!r}")
        check_steps_by_batch(self.steps_by_batch, self.batch_sizes, self.budget)

    def overrides(self) -> dict:
        """The run-config overrides this sweep makes: its steps, decay start and evaluation
        cadence, where set, and its settings."""
        return {key: value for key, value in (
            ("train.steps", self.steps), ("train.lr_decay_start", self.lr_decay_start),
            ("eval.every", self.eval_every)) if value is not None} | dict(self.settings)


@dataclass(frozen=True)
class StudyComparison:
    """What a study's report compares (experiments/reporting): the baseline batch and the
    target batch of the headline comparison, the bigger batches of the practical table, the
    step at which the two lr schedules are set side by side, and the time-to-target arm whose
    fit is the headline (None: the only arm with enough batch sizes)."""
    baseline_batch: int = BASELINE_BATCH
    target_batch: int = 512
    bigger_batches: tuple[int, ...] = (128, 256, 512)
    schedule_step: int = 1000
    headline_arm: str | None = None

    def __post_init__(self):
        _check(self.target_batch != self.baseline_batch > 0,
               f"the comparison needs two batch sizes, got {self.baseline_batch} and "
               f"{self.target_batch}")
        _check(all(b > 0 for b in self.bigger_batches) and self.schedule_step >= 1,
               "comparison batches and schedule_step must be positive")


def check_steps_by_batch(steps_by_batch, batch_sizes, budget: str) -> None:
    """Every batch size has steps >= 1, none is given twice, and no budget rescales them."""
    if not steps_by_batch:
        return
    _check(all(isinstance(kv, tuple) and len(kv) == 2 and kv[1] >= 1 for kv in steps_by_batch),
           f"steps_by_batch must be (batch, steps >= 1) pairs, got {steps_by_batch!r}")
    given = [b for b, _ in steps_by_batch]
    _check(len(set(given)) == len(given), f"steps_by_batch repeats a batch size: {given}")
    missing = sorted(set(batch_sizes) - set(given))
    _check(not missing, f"steps_by_batch has no steps for batch sizes {missing}")
    _check(budget == "equal_steps",
           f"steps_by_batch sets every batch size's steps; budget={budget!r} would rescale "
           "them: use budget='equal_steps'")


def parse_overrides(items: typing.Iterable[str]) -> dict:
    """'section.field=value' strings -> {key: value}; values parse as JSON, else as strings."""
    parsed = {}
    for item in items:
        _check("=" in item, f"override {item!r} is not of the form section.field=value")
        key, raw = item.split("=", 1)
        parsed[key.strip()] = _parse_value(raw.strip())
    return parsed


def _parse_value(raw: str):
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return {"none": None, "null": None, "true": True, "false": False}.get(raw.lower(), raw)
