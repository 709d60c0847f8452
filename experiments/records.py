"""Typed records of a run and their files: the one place that knows what a point directory holds.

    POINT/config.json        the exact RunConfig (written before training starts)
    POINT/eval_history.json  every evaluation during training: [Scores, ...]
    POINT/metrics.json       the PointRecord, written last: its presence marks a finished point
    POINT/interruptions.json the steps runs were preempted at (SIGTERM) and resumed from
    POINT/noise_scale.json   the gradient noise scale's measurements (train.noise_scale_every)
    POINT/environment.json   the environment each run of the point started in (environment.py)
    POINT/samples/           samples.npz, class_grid.png|pdf, generator.npz (final weights)
    POINT/checkpoints/       training state (not committed with results)

Running writes these files and reporting reads them; both import this module, neither imports
the other. Every record has one JSON round trip (`to_dict` / `from_dict`); a file that does not
parse is reported and treated as absent, never as a crash. Paths inside records are relative
to the point directory, so committed results hold no machine paths.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass, field

from common import faults, files
from common.dataclass_json import from_dict
from common.errors import UserError
from experiments.config import ConfigError, RunConfig

log = logging.getLogger(__name__)

METRICS = "metrics.json"
HISTORY = "eval_history.json"
INTERRUPTIONS = "interruptions.json"
NOISE_SCALE = "noise_scale.json"
ENVIRONMENT = "environment.json"
CONFIG = "config.json"
SAMPLES = "samples"
GENERATOR = os.path.join(SAMPLES, "generator.npz")
FINISHED = ("done", "diverged")
POINTS = "points"  # SWEEP/points/NAME: a sweep's point directories (sweep_files.py)


class RecordError(UserError, ValueError):
    """A record file exists but cannot be read as the record it should be."""


class _Record:
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        return from_dict(cls, d, RecordError)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Protocol(_Record):
    """Everything a reader needs to compare a score: FID depends on the sample counts, the
    reference split, the classifier and its input resizing (10k/5k vs 50k/50k differ by
    several points for the same model), so no score is stored without this."""
    protocol: str
    classifier: str
    classifier_version: str | None
    classifier_resize: str | None
    classifier_features: str | None
    n_real: int
    n_fake: int
    reference_split: str
    is_splits: int
    kid_subsets: int
    bn_mode: str
    seed: int
    eval_batch_size: int
    metric_implementation: str
    reference_selection: str = "first n_real examples of the split in stored order"
    kid_std: str = "standard error of TF-GAN's block estimator"
    # precision/recall/density/coverage k-NN distances; records written before this field
    # existed computed them in float64 (uncentred)
    knn_dtype: str = "float64"
    standing_batches: int | None = None
    replicas: int | None = None
    step: int | None = None
    eval_wall_time_s: float | None = None
    dataset: str | None = None
    resolution: int | None = None


@dataclass(frozen=True)
class Scores(_Record):
    """One evaluation of a generator (IS over splits, FID, KID), with its protocol."""
    is_mean: float
    is_std: float
    fid: float
    kid_mean: float
    kid_std: float
    n_fake: int
    n_real: int
    protocol: Protocol
    step: int | None = None
    images_seen: int | None = None
    classify_time_s: float | None = None
    metrics_time_s: float | None = None
    # recognisability (None where they do not apply, e.g. accuracy of an unconditional model)
    accuracy: float | None = None  # classifier top-1 vs the conditioning labels
    per_class_accuracy: list | None = None
    intra_fid: float | None = None  # mean of the per-class FIDs
    per_class_fid: list | None = None
    precision: float | None = None  # improved precision/recall, k = 3
    recall: float | None = None
    density: float | None = None  # density/coverage, k = 5
    coverage: float | None = None
    # the gradient noise scale's smoothed B_simple for D and G at this step (NoiseScale says how)
    b_simple_d: float | None = None
    b_simple_g: float | None = None


@dataclass(frozen=True)
class CasRecipe(_Record):
    """The fixed recipe of a Classification Accuracy Score (Ravuri & Vinyals, arXiv 1905.10887):
    a classifier trained only on `per_class` images of every class, tested on the real
    `test_split`. Every field changes the score, so all of them make its key."""
    per_class: int = 1000
    epochs: int = 3
    batch_size: int = 128
    learning_rate: float = 2e-3
    seed: int = 0  # weights' initialisation, dropout and the data order
    sample_seed: int = 1234  # the generator's latents
    # BN's moving-average momentum: a short run (80 steps of 2,000 images) at Keras' 0.99 kept
    # 45% of the initial statistics and tested at 0.40 against 0.77 in training
    bn_momentum: float = 0.9
    architecture: str = ("the shipped Fashion-MNIST classifier's CNN at half width, fresh "
                         "weights: 3 x (conv3x3-BN-ReLU-maxpool, 16/32/64), dropout 0.3, "
                         "dense 128, dropout 0.3, dense 10")
    optimizer: str = "adam, cosine decay to 0, sparse softmax cross-entropy"
    augmentation: str = "none"
    test_split: str = "test"

    def __post_init__(self):
        for name in ("per_class", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise RecordError(f"CAS recipe: {name} must be >= 1, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise RecordError(f"CAS recipe: learning_rate must be > 0, got {self.learning_rate}")
        if not 0 <= self.bn_momentum < 1:
            raise RecordError(f"CAS recipe: bn_momentum must be in [0, 1), got {self.bn_momentum}")

    @property
    def key(self) -> str:
        """Names the recipe in PointRecord.cas: its counts and schedule, and a digest of all."""
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        return (f"cas_{self.per_class}pc_e{self.epochs}_b{self.batch_size}_s{self.seed}_"
                f"z{self.sample_seed}_{digest}")


@dataclass(frozen=True)
class CasScore(_Record):
    """A CAS: top-1 of a `recipe` classifier on the real test split, overall and per class.
    `trained_on` is 'generated' (a point's generator, sampled in BN mode `bn_mode`) or the real
    split that gives the ceiling ('train': the first `per_class` images of each class)."""
    recipe: CasRecipe
    trained_on: str
    accuracy: float
    per_class_accuracy: list[float]
    n_train: int
    n_test: int
    train_accuracy_last_epoch: float
    train_time_s: float
    wall_time_s: float
    bn_mode: str | None = None
    step: int | None = None


@dataclass(frozen=True)
class NearestPair(_Record):
    """A generated image (index in the sampled set) and its nearest training image."""
    generated_index: int
    train_index: int
    distance: float
    label: int | None = None  # the class the generated image was conditioned on


@dataclass(frozen=True)
class MemorisationScore(_Record):
    """How close generated images come to the training set, against real held-out images.

    Exact nearest-neighbour L2 distances in `space` ('pixels': [-1, 1] images; else a
    classifier's features) from `n_generated` generated images and from `n_test` real test
    images to the `n_train` training images. `threshold` is the `percentile`-th percentile of
    the test images' distances; `fraction_closer` the share of generated images nearer than it
    (~percentile/100 when they are as close to the training set as unseen real images are,
    ~1 when they copy it). `closest` holds the closest pairs, nearest first."""
    space: str
    classifier: str | None
    classifier_version: str | None
    n_generated: int
    n_test: int
    n_train: int
    percentile: float
    threshold: float
    fraction_closer: float
    generated_median: float
    test_median: float
    closest: list[NearestPair]
    seed: int
    bn_mode: str | None
    wall_time_s: float
    step: int | None = None

    @staticmethod
    def key_for(space: str, classifier_version: str | None, n_generated: int,
                percentile: float, seed: int, bn_mode: str | None) -> str:
        where = space if classifier_version is None else f"{space}@{classifier_version[:12]}"
        return f"{where}/n{n_generated}/p{percentile:g}/seed{seed}/{bn_mode}"

    @property
    def key(self) -> str:
        return self.key_for(self.space, self.classifier_version, self.n_generated,
                            self.percentile, self.seed, self.bn_mode)


@dataclass(frozen=True)
class RealRow(_Record):
    """Every metric of the tables with real images in the generator's place: the first
    `scores.n_fake` images of `stand_in_split` scored under the protocol (against the
    reference split, as generated samples are), so each table row has its ceiling beside it.
    `reference_is_*`: the reference split's own IS; `self_fid`: the reference against itself
    (0 up to rounding: the floor of FID). `cas_ceiling`: the CAS recipe trained on real
    training images. `memorisation_threshold` / `memorisation_test_median`: per space, the
    percentile (`memorisation_percentile`) and median of the real test images' distances to
    the nearest training image."""
    cache_key: dict
    stand_in_split: str
    scores: Scores
    reference_is_mean: float
    reference_is_std: float
    self_fid: float
    cas_ceiling: CasScore | None
    memorisation_percentile: float
    memorisation_threshold: dict[str, float]
    memorisation_test_median: dict[str, float]
    wall_time_s: float


@dataclass(frozen=True)
class NoiseScaleEstimate(_Record):
    """One player's B_simple over the run's last window (sngan.noise_scale.window_summary):
    ratio of window means with a bootstrap interval (ci_high None: unbounded), and the mean and
    spread of the smoothed series over the window."""
    measurements: int
    window_start: int | None
    b_simple: float | None
    ci_low: float | None
    ci_high: float | None
    ema_mean: float | None
    ema_std: float | None


@dataclass(frozen=True)
class NoiseScale(_Record):
    """A run's gradient noise scale and the protocol that measured it: the estimator, where
    the small batches came from, every how many steps, the EMA, the window and the two batch
    sizes per player ({'d': [b_small, b_big], 'g': [...]})."""
    estimator: str
    source: str
    every: int
    ema_decay: float
    window_fraction: float
    batches: dict
    d: NoiseScaleEstimate
    g: NoiseScaleEstimate


@dataclass(frozen=True)
class Environment(_Record):
    """What one run of a point ran on (experiments/environment.py collects it).

    `source` is 'measured' when the run wrote it, 'reconstructed' for points made before
    records kept it (then `note` says where the facts come from). `started_at_step`: the step
    the run started or resumed from."""
    source: str
    started_at_step: int
    suite_commit: str | None
    suite_dirty: bool | None
    python: str | None
    packages: dict
    cpu_model: str | None
    cpu_flags: list
    devices: list
    replicator: str | None
    recorded_at: str | None = None
    note: str | None = None

    def __post_init__(self):
        if self.source not in ("measured", "reconstructed"):
            raise RecordError(f"environment source {self.source!r} is not 'measured' or "
                              "'reconstructed'")


@dataclass(frozen=True)
class PointRecord(_Record):
    """A finished point: what ran, how long it took and its final scores.

    The config lives in config.json and the curve in eval_history.json; this record repeats
    neither. `evaluations` holds re-scorings of the final checkpoint under other protocols or
    BN modes, keyed 'protocol/bn_mode'.
    """
    status: str  # 'done' or 'diverged'
    global_batch_size: int
    seed: int
    replicas: int
    bn_batch_per_replica: int
    bn_cross_replica: bool
    steps: int
    images_seen: int
    train_wall_time_s: float
    eval_wall_time_s: float = 0.0
    point_wall_time_s: float = 0.0
    point: str | None = None
    # the sweep arm the point belongs to ('' the main arm); records written before it was kept
    # hold None, and load_point derives it once from the point's name (bsBBBB_seedS_ARM)
    arm: str | None = None
    final: Scores | None = None
    diverged_at: int | None = None
    last_losses: dict | None = None
    sweep_lr_scaling: str | None = None
    sweep_budget: str | None = None
    evaluations: dict[str, Scores] = field(default_factory=dict)
    # the final checkpoint scored again with evaluation seeds seed+1, seed+2, ...
    replicates: list[Scores] = field(default_factory=list)
    # the final generator's weights (relative to the point directory) and their SHA-256
    generator_weights: str | None = None
    generator_sha256: str | None = None
    # whether the training step ran with XLA (train.jit_compile=None decides per device and
    # falls back without XLA if compilation fails); None in records from before it was kept
    jit_compile: bool | None = None
    # the gradient noise scale over the last window (None: not measured)
    noise_scale: NoiseScale | None = None
    # steps at which a SIGTERM made a run checkpoint and stop, and steps later runs resumed
    # from (after a preemption or any other interruption), in order (POINT/interruptions.json)
    preempted_at: list[int] = field(default_factory=list)
    resumed_from: list[int] = field(default_factory=list)
    # the step a train.stop_at condition ended the run at (None: it ran to train.steps)
    stopped_at: int | None = None
    # the environment of each run of the point, in order (empty in records made before)
    environments: list[Environment] = field(default_factory=list)
    # Classification Accuracy Scores of the final generator, keyed by CasRecipe.key
    cas: dict[str, CasScore] = field(default_factory=dict)
    # memorisation checks of the final generator, keyed by MemorisationScore.key
    memorisation: dict[str, MemorisationScore] = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in FINISHED:
            raise RecordError(f"status {self.status!r} is not one of {list(FINISHED)}")
        if self.status == "done" and self.final is None:
            raise RecordError("a 'done' point needs its final scores")


@dataclass(frozen=True)
class Point:
    """A point directory read back: config, record and evaluation history."""
    dir: str
    config: RunConfig
    record: PointRecord
    history: list[Scores]

    @property
    def samples_path(self) -> str:
        return os.path.join(self.dir, SAMPLES, "samples.npz")

    @property
    def generator_path(self) -> str | None:
        w = self.record.generator_weights
        return os.path.join(self.dir, w) if w else None


# -- files -----------------------------------------------------------------------------------
def read_json(path: str):
    """The parsed file, or None if it is missing or corrupt (corruption is logged)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            value = json.load(f)
    except (ValueError, OSError) as e:
        log.warning("%s is corrupt (%s); it is ignored and recomputed", path, e)
        return None
    if value is None:
        log.warning("%s holds null; it is ignored and recomputed", path)
    return value


def _parse(path: str, parse):
    raw = read_json(path)
    if raw is None:
        return None
    try:
        return parse(raw)
    except (RecordError, ConfigError, TypeError, KeyError, ValueError) as e:
        log.warning("%s does not hold a valid record (%s); it is ignored and "
                    "recomputed", path, e)
        return None


def read_config(run_dir: str) -> RunConfig | None:
    return _parse(os.path.join(run_dir, CONFIG), RunConfig.from_dict)


def write_config(run_dir: str, cfg: RunConfig) -> None:
    files.atomic_write_text(os.path.join(run_dir, CONFIG), cfg.to_json() + "\n")


def read_record(run_dir: str) -> PointRecord | None:
    """A finished point's record, else None (missing, corrupt or unknown status)."""
    return _parse(os.path.join(run_dir, METRICS), PointRecord.from_dict)


def write_record(run_dir: str, record: PointRecord) -> None:
    faults.reached("record_write")
    files.atomic_write_json(os.path.join(run_dir, METRICS), record.to_dict())


def read_history(run_dir: str) -> list[Scores]:
    history = _parse(os.path.join(run_dir, HISTORY),
                     lambda raw: [Scores.from_dict(h) for h in raw])
    return history or []


def write_history(run_dir: str, history: list[Scores]) -> None:
    faults.reached("history_write")
    files.atomic_write_json(os.path.join(run_dir, HISTORY), [h.to_dict() for h in history])


def read_noise_series(run_dir: str) -> dict | None:
    """The noise scale's saved measurements (sngan.noise_scale.NoiseScaleTracker.to_dict)."""
    raw = read_json(os.path.join(run_dir, NOISE_SCALE))
    return raw if isinstance(raw, dict) and isinstance(raw.get("series"), dict) else None


def write_noise_series(run_dir: str, series: dict) -> None:
    files.atomic_write_json(os.path.join(run_dir, NOISE_SCALE), series)


def read_interruptions(run_dir: str) -> dict[str, list[int]]:
    """{'preempted_at': [...], 'resumed_from': [...]}: what interrupted runs of a point did."""
    raw = _parse(os.path.join(run_dir, INTERRUPTIONS),
                 lambda d: {k: [int(s) for s in d.get(k, [])]
                            for k in ("preempted_at", "resumed_from")})
    return raw or {"preempted_at": [], "resumed_from": []}


def add_interruption(run_dir: str, kind: str, step: int) -> dict[str, list[int]]:
    """Append `step` to the point's `kind` list ('preempted_at' or 'resumed_from')."""
    seen = read_interruptions(run_dir)
    seen[kind].append(int(step))
    files.atomic_write_json(os.path.join(run_dir, INTERRUPTIONS), seen)
    return seen


def read_environments(run_dir: str) -> list[Environment]:
    raw = _parse(os.path.join(run_dir, ENVIRONMENT),
                 lambda d: [Environment.from_dict(e) for e in d["runs"]])
    return raw or []


def write_environments(run_dir: str, envs: list[Environment]) -> None:
    files.atomic_write_json(os.path.join(run_dir, ENVIRONMENT),
                            {"runs": [e.to_dict() for e in envs]})


def arm_of_name(name: str) -> str:
    """The arm a point name encodes ('' for the main arm): the suffix after bsBBBB_seedS."""
    parts = os.path.basename(name.rstrip("/")).split("_", 2)
    return parts[2] if len(parts) == 3 else ""


def load_point(run_dir: str) -> Point | None:
    record, config = read_record(run_dir), read_config(run_dir)
    if record is None or config is None:
        return None
    if record.arm is None:  # written before records kept their arm
        record = record.replace(arm=arm_of_name(run_dir))
    return Point(run_dir, config, record, read_history(run_dir))


def load_points(sweep_dir: str) -> list[Point]:
    """Every finished point of a sweep directory, in name order."""
    root = os.path.join(sweep_dir, POINTS)
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    points = [load_point(os.path.join(root, n)) for n in names
              if os.path.exists(os.path.join(root, n, METRICS))]
    return [p for p in points if p is not None]


def finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)
