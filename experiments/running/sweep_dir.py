"""A sweep's output directory belongs to one study: its sweep.json says which.

Re-running a directory with other settings would put points of two studies in one table, so
a sweep.json that differs is refused, naming the fields, unless the user asks to start over
(which deletes that sweep's points/, report/ and sweep.json). Fields that do not change
results (cadences, replicator; see run_dir.RESUMABLE_FIELDS) and the base's batch size and
seed (every point sets its own) may differ; more batch sizes or seeds extend the study.
Call these with the directory's lock held (lock.py).
"""
from __future__ import annotations

import json
import logging
import os
import shutil

from common import files
from common.errors import UserError
from experiments import records
from experiments.config import ConfigError, RunConfig
from experiments.running.run_dir import RESUMABLE_FIELDS, flatten

log = logging.getLogger(__name__)

SWEEP_FILE = "sweep.json"
STARTED_OVER = ("points", "report", SWEEP_FILE)  # what --start-over deletes, nothing else
IGNORED = {"base.train.global_batch_size", "base.train.seed"} | {
    "base." + f for f in RESUMABLE_FIELDS}
GROWABLE = ("batch_sizes", "seeds")


class SweepMismatchError(UserError, RuntimeError):
    """The output directory holds a sweep with other settings."""


def _normalised(spec: dict) -> dict:
    """A recorded spec with the defaults of fields added since it was written filled in."""
    spec = dict(spec)
    try:
        spec["base"] = RunConfig.from_dict(spec.get("base")).to_dict()
    except ConfigError as e:
        spec["base"] = f"unreadable ({e})"
    return spec


def differences(saved: dict, current: dict) -> list[str]:
    """Fields of `current` that differ from the recorded sweep, with both values."""
    current = json.loads(files.to_json(current))  # tuples as lists, as recorded
    a, b = flatten(_normalised(saved)), flatten(current)
    out = []
    for key in sorted(set(a) | set(b)):
        if key in IGNORED or a.get(key) == b.get(key):
            continue
        if key in GROWABLE and isinstance(a.get(key), list) and isinstance(b.get(key), list) \
                and set(a[key]) <= set(b[key]):
            continue
        out.append(f"{key} (recorded {_short(a.get(key))}, now {_short(b.get(key))})")
    return out


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def start_over(out_dir: str) -> list[str]:
    """Delete the sweep's points/, report/ and sweep.json; returns what was deleted."""
    removed = []
    for name in STARTED_OVER:
        path = os.path.join(out_dir, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)
        else:
            continue
        removed.append(name)
    if removed:
        log.warning("warning: --start-over: deleted %s from %s", ", ".join(removed), out_dir)
    return removed


def check(out_dir: str, spec: dict) -> None:
    """Refuse a directory recorded by a sweep with other settings (writes nothing)."""
    saved = records.read_json(os.path.join(out_dir, SWEEP_FILE))
    if not isinstance(saved, dict):
        return  # absent or corrupt: the points' own configs still guard their results
    diff = differences(saved, spec)
    if diff:
        raise SweepMismatchError(
            f"{out_dir} holds a sweep with other settings ({SWEEP_FILE} differs in "
            f"{'; '.join(diff)}): choose another --out, rerun with the recorded settings, or "
            "pass --start-over to delete its points/ and report/ and start again")


def claim(out_dir: str, spec: dict, restart: bool = False) -> None:
    """Make `out_dir` this sweep's: start over if asked, refuse another sweep's, record it."""
    if restart:
        start_over(out_dir)
    check(out_dir, spec)
    files.atomic_write_json(os.path.join(out_dir, SWEEP_FILE), spec)
