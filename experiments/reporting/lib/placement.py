"""Enumerated verdicts: where a value lies against an interval, counted over targets, and
whether a fitted quantity moved between two targets by more than its intervals.

The report states these as counts in fixed templates ("below at 9 of 9 targets"); it never
builds a sentence by branching on them."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

BELOW, INSIDE, ABOVE = "below", "inside", "above"
GROWS, FALLS, WITHIN = "grows", "falls", "within its intervals"


def place(value: float, low: float, high: float) -> str:
    return BELOW if value < low else ABOVE if value > high else INSIDE


@dataclass(frozen=True)
class Tally:
    """How often a value lay below, inside and above the intervals it was set against, and
    the range of value / centre."""
    n: int
    below: int
    inside: int
    above: int
    ratio_low: float | None
    ratio_high: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def tally(pairs) -> Tally:
    """`pairs`: (value, centre, low, high) per target."""
    pairs = list(pairs)
    counts = Counter(place(v, lo, hi) for v, _, lo, hi in pairs)
    ratios = [v / c for v, c, _, _ in pairs]
    return Tally(len(pairs), counts[BELOW], counts[INSIDE], counts[ABOVE],
                 min(ratios) if ratios else None, max(ratios) if ratios else None)


def change(first: tuple[float, float, float], last: tuple[float, float, float]) -> str:
    """(centre, low, high) at two targets: GROWS when the last interval lies above the first's
    centre and the first interval below the last's, FALLS the mirror, else WITHIN."""
    (c0, lo0, hi0), (c1, lo1, hi1) = first, last
    if lo1 > c0 and hi0 < c1:
        return GROWS
    if hi1 < c0 and lo0 > c1:
        return FALLS
    return WITHIN
