"""A finished point's record (metrics.json) and the records it holds beside its scores.

`PointRecord` says what ran, how long it took and its final scores; `NoiseScale` the gradient
noise scale measured over the run; `Environment` what each run of the point ran on. Where they
are stored and how they are read back is records.py's job.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from experiments.record_base import Record, RecordError
from experiments.score_records import CasScore, MemorisationScore, Scores

FINISHED = ("done", "diverged")


@dataclass(frozen=True)
class NoiseScaleEstimate(Record):
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
class NoiseScale(Record):
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
class Environment(Record):
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
class PointRecord(Record):
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

