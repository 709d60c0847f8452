"""The scores the report reads, once: record field, label, direction, format and target grid;
and the one helper for a set of values' mean, sd, coefficient of variation and geometric
mean."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Metric:
    """`field`: the records.Scores attribute. `targets`: (first, spacing) of the grid of
    time-to-target thresholds, or None where steps to a target are not analysed."""
    key: str
    field: str
    label: str
    higher_is_better: bool
    fmt: str
    targets: tuple[float, float] | None = None
    target_fmt: str = ".2f"  # a target of the grid, as the report names it

    def value(self, scores) -> float | None:
        return None if scores is None else getattr(scores, self.field)


METRICS = {m.key: m for m in (
    Metric("is", "is_mean", "IS", True, ".2f", targets=(3.0, 0.5), target_fmt=".1f"),
    Metric("fid", "fid", "FID", False, ".1f"),
    Metric("kid", "kid_mean", "KID", False, ".3g"),
    Metric("acc", "accuracy", "conditional accuracy", True, ".3f", targets=(0.2, 0.05)),
    Metric("intra_fid", "intra_fid", "intra-FID", False, ".1f"),
    Metric("precision", "precision", "precision", True, ".2f"),
    Metric("recall", "recall", "recall", True, ".2f"),
)}
COMPARED = ("is", "fid", "acc")  # the metrics with verdicts and ratios to the baseline
PRIMARY = "is"
TARGETED = tuple(k for k, m in METRICS.items() if m.targets)  # steps-to-target metrics


@dataclass(frozen=True)
class MeanSd:
    mean: float | None
    sd: float | None


@dataclass(frozen=True)
class Description:
    """Finite values' count, mean, sample sd (None below 2) and geometric mean (None unless
    every value is positive)."""
    n: int
    mean: float | None
    sd: float | None
    geomean: float | None

    @property
    def mean_sd(self) -> MeanSd:
        return MeanSd(self.mean, self.sd)

    @property
    def cv(self) -> float | None:
        """Coefficient of variation, sd / |mean|."""
        return None if self.sd is None else self.sd / abs(self.mean)


def finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def describe(values) -> Description:
    v = finite(values)
    if not v:
        return Description(0, None, None, None)
    return Description(len(v), float(np.mean(v)),
                       float(np.std(v, ddof=1)) if len(v) > 1 else None,
                       float(np.exp(np.mean(np.log(v)))) if min(v) > 0 else None)
