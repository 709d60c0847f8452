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

from common.dataclass_json import field_value, from_dict
from experiments.evaluation.kid_blocks import kid_blocks_fit, max_kid_subsets
from sngan.config import (  # noqa: F401  (the model and training schema, re-exported)
    ConfigError,
    ModelConfig,
    TrainConfig,
    parse_stop_at,
    replicas_in_spec,
)
from sngan.config import check as _check
from sngan.config import check_choice as _choice
from sngan.options import BN_MODES, RESOLUTIONS

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
DATA_SOURCES = ("auto", "idx", "tfds", "folder")
RESIZE_METHODS = ("pad", "resize", "resize_shorter_center_crop")
CLASSIFIERS = ("fashion_mnist_classifier", "fashion_mnist_resnet", "inception")
FASHION_MNIST_CLASSIFIERS = ("fashion_mnist_classifier", "fashion_mnist_resnet")
LR_SCALING = ("none", "linear", "sqrt")
BUDGET_MODES = ("equal_steps", "equal_images")
BASELINE_BATCH = 64  # the paper's "64 -> 512" comparison; lr scaling and budgets are relative to it



@dataclass(frozen=True)
class EvalProtocol:
    """What a named evaluation protocol fixes: the sample counts, the real images' split and
    the IS splits (the names are EvalConfig's fields)."""
    num_fake: int
    num_real: int
    reference_split: str
    is_splits: int

    def fields(self) -> dict:
        return dataclasses.asdict(self)


EVAL_PROTOCOLS: dict[str, EvalProtocol] = {
    "fast": EvalProtocol(num_fake=5_000, num_real=10_000, reference_split="test", is_splits=10),
    "standard": EvalProtocol(num_fake=50_000, num_real=50_000, reference_split="train",
                             is_splits=10),
    "tiny": EvalProtocol(num_fake=500, num_real=1_000, reference_split="test", is_splits=5),
}
# sngan_projection scores CIFAR-10 with 5,000 samples against the 10,000 test images: the
# "fast" counts under the name its records carry.
EVAL_PROTOCOLS["sngan_paper"] = EVAL_PROTOCOLS["fast"]


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
            fixed = EVAL_PROTOCOLS[self.protocol].fields()
            _check(all(getattr(self, name) == value for name, value in fixed.items()),
                   f"eval.protocol={self.protocol!r} fixes "
                   f"{', '.join(f'{name}={value!r}' for name, value in fixed.items())}; use "
                   "protocol='custom' to change them")
        _check(kid_blocks_fit(self.num_fake, self.num_real, self.kid_subsets),
               f"eval.kid_subsets={self.kid_subsets} is too many for {self.num_fake} generated "
               f"and {self.num_real} real samples: KID's block estimator needs >= 2 samples of "
               f"each set per subset; use eval.kid_subsets <= "
               f"{max_kid_subsets(self.num_fake, self.num_real)} or more samples")

    @staticmethod
    def for_protocol(protocol: str, **kw) -> EvalConfig:
        _choice(protocol, tuple(EVAL_PROTOCOLS), "eval.protocol")
        return EvalConfig(protocol=protocol, **EVAL_PROTOCOLS[protocol].fields(), **kw)


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
        if self.eval.classifier in FASHION_MNIST_CLASSIFIERS:
            _check(self.data.name == "fashion_mnist",
                   f"eval.classifier={self.eval.classifier!r} only scores fashion_mnist; "
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
        protocol = overrides.get("eval.protocol")
        if protocol in EVAL_PROTOCOLS:  # a named protocol brings its counts unless overridden
            for k, v in EVAL_PROTOCOLS[protocol].fields().items():
                overrides.setdefault("eval." + k, v)
        check_overrides(overrides)
        d = self.to_dict()
        for key, value in overrides.items():
            section, name = key.split(".")
            d[section][name] = value
        return RunConfig.from_dict(d)


# the sections an override may name: RunConfig's dataclass fields ('preset' is not one)
_SECTIONS = {name: hint for name, hint in typing.get_type_hints(RunConfig).items()
             if dataclasses.is_dataclass(hint)}


def check_overrides(overrides: dict) -> None:
    """Every key names a config field and every value has its field's type (a boolean is not
    a number): checked for each override, so one that a caller replaces later (a sweep sets
    every point's batch size) is still refused, with the error a config file would give."""
    for key, value in overrides.items():
        section, _, name = key.partition(".")
        if not (section in _SECTIONS and name and "." not in name):
            known = (f"{s}.{f.name}" for s, c in _SECTIONS.items() for f in dataclasses.fields(c))
            raise ConfigError(f"unknown config key {key!r}; expected one of {sorted(known)}")
        names = sorted(f.name for f in dataclasses.fields(_SECTIONS[section]))
        _check(name in names, f"unknown config key {key!r}; {section} has {names}")
        field_value(_SECTIONS[section], name, value, ConfigError, section + ".")


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
    # study v5: the arms of the lr search (each a factor on the lr, every batch size) and the
    # arms it reuses (a fixed-lr arm as factor 1, probes); the search arms get their own
    # section, not a time-to-target fit each
    lr_search_arms: tuple[str, ...] = ()
    lr_search_reuses: tuple[str, ...] = ()

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
