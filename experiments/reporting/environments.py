"""Which environments a report's points come from, in one line.

The same config gives other numbers on another CPU or TensorFlow release (rounding amplified
over training; bfloat16 ran 1.38x or 1.63x faster than float32 depending on the CPU), so the
report names the environments of the points it compares, and says in one line when one
comparison mixes them, as it does for precision. Two points share an environment when their
TensorFlow and Keras versions, CPU model and CPU flags agree and both were measured or both
reconstructed (records.Environment); a point resumed under another environment counts as the
sequence of its environments.
"""
from __future__ import annotations

from collections import Counter

from experiments import environment
from experiments.records import Environment, Point, PointRecord

UNRECORDED = "an unrecorded environment"  # a record from before environments were kept


def _label(env: Environment) -> str:
    """environment.describe's line (the stack, the CPU model and its flags), plus whether the
    facts were reconstructed from the project's history rather than measured."""
    return environment.describe(env) + (" (reconstructed)" if env.source == "reconstructed"
                                        else "")


def point_environment(record: PointRecord) -> str:
    labels = list(dict.fromkeys(_label(e) for e in record.environments))  # distinct, in order
    return " then ".join(labels) if labels else UNRECORDED


def counts(points: list[Point | PointRecord]) -> list[tuple[str, int]]:
    """(environment, number of points), most points first."""
    c = Counter(point_environment(getattr(p, "record", p)) for p in points)
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))


def _listed(groups: list[tuple[str, int]]) -> str:
    return "; ".join(f"{label} ({n})" for label, n in groups) or "-"


def environments_line(points: list[Point | PointRecord]) -> str:
    """The distinct environments of `points` with their point counts, in one short line."""
    return f"Environments (points): {_listed(counts(points))}."


def mixed_line(points: list[Point | PointRecord]) -> str | None:
    """The one line saying that `points` (one comparison) come from several environments,
    naming each with its count; None when they share one."""
    groups = counts(points)
    if len(groups) < 2:
        return None
    return (f"Mixed environments ({len(groups)}): part of a difference between these points "
            "may be the environment's (a rerun on another CPU or stack differs by rounding "
            f"amplified over training). Environments (points): {_listed(groups)}.")


def line(points: list[Point | PointRecord]) -> str:
    """What a protocol line or a comparison says: the mixed line, else the environment."""
    return mixed_line(points) or environments_line(points)
