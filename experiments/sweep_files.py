"""A sweep directory, described once: what it holds and how each file is read back.

    SWEEP/sweep.json, sweep.ARM.json   each arm's recorded sweep (SweepFile)
    SWEEP/points/NAME/                 one point per (batch, seed) of an arm (records.py);
                                       NAME is bsBBBB_seedS, with _ARM appended for an arm
    SWEEP/noise_scale/**/*.json        saved `noise-scale --save` runs (NoiseScaleRun)
    SWEEP/report/                      what reporting writes

Running and reporting both import this module; neither imports the other. A file that does not
parse as what it should be is reported with its path (a warning naming the file and the
field), never skipped in silence.
"""
from __future__ import annotations

import glob
import logging
import os
from dataclasses import dataclass, field

from experiments import records
from experiments.records import NoiseScale, Point, RecordError

log = logging.getLogger(__name__)

POINTS = records.POINTS
REPORT = "report"
NOISE_SCALE_RUNS = "noise_scale"
SWEEP_FILE = "sweep.json"


def sweep_file(sweep_dir: str, arm: str = "") -> str:
    return os.path.join(sweep_dir, f"sweep.{arm}.json" if arm else SWEEP_FILE)


def point_name(batch: int, seed: int, arm: str = "") -> str:
    return f"bs{batch:04d}_seed{seed}" + (f"_{arm}" if arm else "")


@dataclass(frozen=True)
class SweepFile:
    """One arm's sweep.json: its points ([batch, seed] pairs, every run's union) and the axes
    it varies (experiments.config.SweepAxes); `steps_by_batch` ({batch: steps}) is set by
    time-to-target arms, which train each batch size for its own number of steps."""
    arm: str
    points: list
    budget: str = "equal_steps"
    lr_scaling: str = "none"
    steps_by_batch: dict = field(default_factory=dict)
    base: dict | None = None

    @property
    def time_to_target(self) -> bool:
        return bool(self.steps_by_batch)

    @classmethod
    def from_dict(cls, d: dict) -> SweepFile:
        if not isinstance(d, dict):
            raise RecordError(f"a sweep file holds an object, got {type(d).__name__}")
        d = dict(d)
        seeds, sizes = d.pop("seeds", None) or [], d.pop("batch_sizes", None) or []
        d.setdefault("points", [[b, s] for s in seeds for b in sizes])  # before arms
        d.setdefault("arm", "")
        known = {k: d[k] for k in ("arm", "points", "budget", "lr_scaling", "steps_by_batch",
                                   "base") if k in d and d[k] is not None}
        return cls(**known)


def _warn(path: str, e: Exception) -> None:
    log.warning("%s is not readable as what it should be (%s): left out of the report",
                path, e)


def read_sweep_files(sweep_dir: str) -> dict[str, SweepFile]:
    """{arm: its SweepFile} of every sweep file in the directory (malformed ones reported)."""
    out = {}
    paths = [sweep_file(sweep_dir)] + sorted(glob.glob(os.path.join(glob.escape(sweep_dir),
                                                                     "sweep.*.json")))
    for path in paths:
        if not os.path.exists(path):
            continue
        try:
            spec = SweepFile.from_dict(records.read_json(path))
        except (RecordError, TypeError, ValueError) as e:
            _warn(path, e)
            continue
        out[spec.arm] = spec
    return out


def points_by_arm(sweep_dir: str) -> dict[str, list[Point]]:
    """{arm: its finished points, in name order} ('' is the main arm)."""
    out: dict[str, list[Point]] = {}
    for p in records.load_points(sweep_dir):
        out.setdefault(p.record.arm, []).append(p)
    return out


@dataclass(frozen=True)
class NoiseScaleRun(records.Record):
    """A saved `python -m experiments noise-scale --save FILE` run: its settings, the noise
    scale over its last window (records.NoiseScale) and the measured series
    ({player: {steps, b_simple, ...}})."""
    command: str
    preset: str
    global_batch_size: int
    steps: int
    seed: int
    n_dis: int
    replicas: int
    replicator: str
    schedule_steps: int
    lr_decay_start: int | None
    diverged_at: int | None
    train_wall_time_s: float
    noise_scale: NoiseScale | None
    series: dict
    bn_cross_replica: bool  # the BN statistics the estimator's small batches share
    precision: str | None = None  # None: saved before it was kept (float32 then)


def read_noise_scale_runs(sweep_dir: str, under: str = "") -> list[tuple[str, NoiseScaleRun]]:
    """(file name, run) of every saved noise-scale run in SWEEP/noise_scale/UNDER/*.json, in
    name order; a file that is not one is reported with its path and left out."""
    out = []
    pattern = os.path.join(glob.escape(os.path.join(sweep_dir, NOISE_SCALE_RUNS, under)),
                           "*.json")
    for path in sorted(glob.glob(pattern)):
        raw = records.read_json(path)
        try:
            out.append((os.path.basename(path), NoiseScaleRun.from_dict(raw)))
        except RecordError as e:
            _warn(path, e)
    return out
