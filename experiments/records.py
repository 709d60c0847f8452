"""A point directory's files: the one place that knows what a point directory holds.

    POINT/config.json        the exact RunConfig (written before training starts)
    POINT/eval_history.json  every evaluation during training: [Scores, ...]
    POINT/metrics.json       the PointRecord, written last: its presence marks a finished point
    POINT/interruptions.json the steps runs were preempted at (SIGTERM) and resumed from
    POINT/noise_scale.json   the gradient noise scale's measurements (train.noise_scale_every)
    POINT/environment.json   the environment each run of the point started in (environment.py)
    POINT/samples/           samples.npz, class_grid.png|pdf, generator.npz (final weights)
    POINT/checkpoints/       training state (not committed with results)

Running writes these files and reporting reads them; both import this module, neither imports
the other. The records themselves are defined beside it (score_records.py: what an evaluation
measured; point_record.py: the finished point; record_base.py: their JSON round trip) and
re-exported here, so `from experiments.records import Scores` keeps working. A file that does
not parse is reported and treated as absent, never as a crash. Paths inside records are
relative to the point directory, so committed results hold no machine paths.
"""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass

from common import faults, files
from experiments.config import ConfigError, RunConfig
from experiments.point_record import (
    FINISHED,
    Environment,
    NoiseScale,
    NoiseScaleEstimate,
    PointRecord,
)
from experiments.record_base import Record, RecordError
from experiments.score_records import (
    CasRecipe,
    CasScore,
    MemorisationScore,
    NearestPair,
    Protocol,
    RealRow,
    Scores,
)

# the record types are defined beside this module and read from here, as before the split
__all__ = [
    "FINISHED", "Environment", "NoiseScale", "NoiseScaleEstimate", "PointRecord",
    "Record", "RecordError",
    "CasRecipe", "CasScore", "MemorisationScore", "NearestPair", "Protocol", "RealRow", "Scores",
    "METRICS", "HISTORY", "INTERRUPTIONS", "NOISE_SCALE", "ENVIRONMENT", "CONFIG", "SAMPLES",
    "GENERATOR", "POINTS", "Point",
    "read_json", "read_config", "write_config", "read_record", "write_record", "read_history",
    "write_history", "read_noise_series", "write_noise_series", "read_interruptions",
    "add_interruption", "read_environments", "write_environments", "arm_of_name",
    "load_point", "load_points", "finite",
]

log = logging.getLogger(__name__)

METRICS = "metrics.json"
HISTORY = "eval_history.json"
INTERRUPTIONS = "interruptions.json"
NOISE_SCALE = "noise_scale.json"
ENVIRONMENT = "environment.json"
CONFIG = "config.json"
SAMPLES = "samples"
GENERATOR = os.path.join(SAMPLES, "generator.npz")
POINTS = "points"  # SWEEP/points/NAME: a sweep's point directories (sweep_files.py)


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
