"""A sweep's output directory belongs to one study: its sweep.json says which.

Re-running a directory with other settings would put points of two studies in one table, so
a recorded sweep that differs is refused, naming the fields, unless the user asks to start
over (which deletes the directory's points/, report/ and sweep files). Fields that do not
change results (cadences, replicator; see run_dir.RESUMABLE_FIELDS) and the base's batch size
and seed (every point sets its own) may differ. The points themselves may differ: a sweep of
other batch sizes or seeds with the same settings extends the study, and the file records the
union of every run's points, so nothing is forgotten.

A further comparison in the same directory (an arm, experiments.config.SweepAxes.arm) has its
own file, sweep.ARM.json, checked the same way: its settings may differ from the main arm's,
and its point names (ending in _ARM) keep its points apart.
Call `claim` with the directory's lock held (lock.py).
"""
from __future__ import annotations

import glob
import json
import logging
import os
import shutil

from common import files
from common.errors import UserError
from experiments import records, sweep_files
from experiments.config import ConfigError, RunConfig
from experiments.running.run_dir import RESUMABLE_FIELDS, flatten

log = logging.getLogger(__name__)

SWEEP_FILE = sweep_files.SWEEP_FILE
POINTS = sweep_files.POINTS
STARTED_OVER = (POINTS, sweep_files.REPORT)  # what --start-over deletes, with the sweep files
IGNORED = {"base.train.global_batch_size", "base.train.seed"} | {
    "base." + f for f in RESUMABLE_FIELDS}


class SweepMismatchError(UserError, RuntimeError):
    """The output directory holds a sweep with other settings."""


class NotASweepError(UserError, FileNotFoundError):
    """A directory given as a sweep's holds no points."""


sweep_file = sweep_files.sweep_file


def _normalised(spec: dict) -> dict:
    """A recorded spec in today's form: config fields added since it was written at their
    defaults, and a (batch_sizes, seeds) grid, as sweep.json held before arms, as points."""
    spec = dict(spec)
    try:
        spec["base"] = RunConfig.from_dict(spec.get("base")).to_dict()
    except ConfigError as e:
        spec["base"] = f"unreadable ({e})"
    seeds, batch_sizes = spec.pop("seeds", None) or [], spec.pop("batch_sizes", None) or []
    if "points" not in spec:
        spec["points"] = [[b, s] for s in seeds for b in batch_sizes]
    spec.setdefault("arm", "")
    return spec


def differences(saved: dict, current: dict) -> list[str]:
    """Settings of `current` that differ from the recorded sweep, with both values (the points
    may differ: they extend the study)."""
    current = json.loads(files.to_json(current))  # tuples as lists, as recorded
    a, b = flatten(_normalised(saved)), flatten(_normalised(current))
    out = []
    for key in sorted(set(a) | set(b)):
        if key in IGNORED or key == "points" or a.get(key) == b.get(key):
            continue
        out.append(f"{key} (recorded {_short(a.get(key))}, now {_short(b.get(key))})")
    return out


def merged(saved: dict | None, current: dict) -> dict:
    """`current` recording the points of both (the recorded ones first, in their order)."""
    current = json.loads(files.to_json(current))
    points = _normalised(saved)["points"] if isinstance(saved, dict) else []
    points += [p for p in current["points"] if p not in points]
    return {**current, "points": points}


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def start_over(out_dir: str) -> list[str]:
    """Delete the sweep's points/, report/ and sweep files; returns what was deleted."""
    removed = []
    arms = sorted(glob.glob(os.path.join(glob.escape(out_dir), "sweep.*.json")))
    for path in [os.path.join(out_dir, n) for n in STARTED_OVER + (SWEEP_FILE,)] + arms:
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)
        else:
            continue
        removed.append(os.path.basename(path))
    if removed:
        log.warning("--start-over: deleted %s from %s", ", ".join(removed), out_dir)
    return removed


def check(out_dir: str, spec: dict) -> None:
    """Refuse a directory recorded by a sweep with other settings (writes nothing)."""
    path = sweep_file(out_dir, spec.get("arm", ""))
    saved = records.read_json(path)
    if not isinstance(saved, dict):
        return  # absent or corrupt: the points' own configs still guard their results
    diff = differences(saved, spec)
    if diff:
        raise SweepMismatchError(
            f"{out_dir} holds a sweep with other settings ({os.path.basename(path)} differs in "
            f"{'; '.join(diff)}): choose another --out, rerun with the recorded settings, "
            "give this comparison its own --arm, or pass --start-over to delete its points/ "
            "and report/ and start again")


def claim(out_dir: str, spec: dict, restart: bool = False) -> None:
    """Make `out_dir` this sweep's: start over if asked, refuse another sweep's, record it
    (with the points recorded before)."""
    if restart:
        start_over(out_dir)
    check(out_dir, spec)
    path = sweep_file(out_dir, spec.get("arm", ""))
    files.atomic_write_json(path, merged(records.read_json(path), spec))


def require_points(out_dir: str) -> str:
    """`out_dir` if it holds a sweep's points/ (what a report is made from)."""
    if not os.path.isdir(out_dir):
        raise NotASweepError(f"report directory {out_dir!r} does not exist: give the "
                                 "directory that holds a sweep's points/")
    if not os.path.isdir(os.path.join(out_dir, POINTS)):
        raise NotASweepError(f"{out_dir!r} holds no {POINTS}/ directory: is it a sweep's "
                                 "--out?")
    return out_dir
