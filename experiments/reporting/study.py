"""What every section of a report reads: the sweep's points by arm, the study's comparison
(experiments.config.StudyComparison, from the experiment's config) and where figures go.

The points a section sees are split once here: the time-to-target arms (whose sweep file sets
each batch size's steps) apart from the budget comparisons, and of those the points of one
precision (float32 where there are any; precision.py compares the others with them)."""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

from experiments import configs, sweep_files
from experiments.config import StudyComparison
from experiments.records import Point
from experiments.reporting.lib import mccandlish
from experiments.reporting.lib.seeds import split_by_budget

MAIN_PRECISION = "float32"


def precision_of(point: Point) -> str:
    return point.config.train.precision


@dataclass(frozen=True)
class Study:
    sweep_dir: str
    out_dir: str
    points: tuple[Point, ...]  # every finished point of the directory
    comparison: StudyComparison
    time_to_target_arms: tuple[str, ...] = ()
    bootstrap: int = mccandlish.BOOTSTRAP

    @classmethod
    def load(cls, sweep_dir: str, out_dir: str, comparison: StudyComparison | None = None,
             bootstrap: int = mccandlish.BOOTSTRAP) -> Study:
        by_arm = sweep_files.points_by_arm(sweep_dir)
        points = tuple(p for arm in sorted(by_arm) for p in by_arm[arm])
        if comparison is None:
            presets = {p.config.preset for p in points}
            comparison = (configs.comparison(presets.pop()) if len(presets) == 1
                          else StudyComparison())
        arms = tuple(sorted(a for a, f in sweep_files.read_sweep_files(sweep_dir).items()
                            if a and f.time_to_target))
        return cls(sweep_dir, out_dir, points, comparison, arms, bootstrap)

    @functools.cached_property
    def budget_points(self) -> list[Point]:
        """Points of no time-to-target arm, every precision."""
        return [p for p in self.points if p.record.arm not in self.time_to_target_arms]

    @functools.cached_property
    def main_precision(self) -> str | None:
        counts = Counter(precision_of(p) for p in self.budget_points)
        if not counts:
            return None
        return MAIN_PRECISION if MAIN_PRECISION in counts else counts.most_common(1)[0][0]

    @functools.cached_property
    def compared(self) -> list[Point]:
        """The budget points of the main precision: what the comparisons use."""
        return [p for p in self.budget_points if precision_of(p) == self.main_precision]

    @functools.cached_property
    def other_precisions(self) -> dict[str, int]:
        """{precision: points} of the budget points left out of the comparisons."""
        return dict(sorted(Counter(precision_of(p) for p in self.budget_points
                                   if precision_of(p) != self.main_precision).items()))

    @property
    def table_points(self) -> list[Point]:
        """The batch table's points: equal steps where there are any, else every one."""
        return split_by_budget(self.compared)[0]

    @property
    def controls(self) -> list[Point]:
        """Equal-images control points beside an equal-steps table."""
        return split_by_budget(self.compared)[1]

    def arm(self, name: str) -> list[Point]:
        """A time-to-target arm's points with a curve (a diverged one is kept: a result)."""
        return [p for p in self.points if p.record.arm == name
                and (p.history or p.record.status != "done")]
