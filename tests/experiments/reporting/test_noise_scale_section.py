"""The noise-scale section: saved runs and measured points in one table, each B_simple placed
against the fitted B_crit intervals (counts, not clauses), and the coupling runs listed."""
import json
import os

import pytest
from fake_results import make_point, noise_scale_run, study_of

from experiments import records
from experiments.reporting.lib import placement as pl
from experiments.reporting.lib.mccandlish import Fit
from experiments.reporting.sections import noise_scale as ns


def summary(b_d, b_g, source="2 slices"):
    def est(b):
        return dict(measurements=12, window_start=130, b_simple=b,
                    ci_low=None if b is None else 0.8 * b, ci_high=None if b is None else 1.3 * b,
                    ema_mean=b, ema_std=None if b is None else 0.1 * b)
    return dict(estimator="B_simple ... arXiv 1812.06162", source=source, every=10,
                ema_decay=0.9, window_fraction=0.5, batches={"d": [32, 64], "g": [32, 64]},
                d=est(b_d), g=est(b_g))


def fit(b_crit, low, high):
    return Fit(1.0, b_crit, 1.0, 2, (), (), (), (), b_crit_ci=(low, high))


# the reference run's fits: 25 [8, 51] at IS 3.0, about 35 [29, 45] above
REFERENCE = [fit(25.0, 8.0, 51.0), fit(33.0, 28.0, 39.0), fit(35.0, 29.0, 45.0)]


def test_each_reading_is_placed_against_every_fitted_interval():
    runs = [ns.Measurement(64, "run a", 300, records.NoiseScale.from_dict(summary(5.0, 57.0)),
                           {}),
            ns.Measurement(512, "run b", 300, records.NoiseScale.from_dict(summary(30.0, None)),
                           {})]
    placed = {(p.source, p.player): p for p in ns.placements(runs, REFERENCE)}
    assert sorted(placed) == [("run a", "d"), ("run a", "g"), ("run b", "d")]  # G undefined
    assert [placed["run a", "d"].__dict__[k] for k in ("n", "below", "inside", "above")] == [
        3, 3, 0, 0]
    assert [placed["run a", "g"].__dict__[k] for k in ("n", "below", "inside", "above")] == [
        3, 0, 0, 3]
    assert [placed["run b", "d"].__dict__[k] for k in ("below", "inside", "above")] == [0, 3, 0]
    assert placed["run a", "g"].ratio_low == pytest.approx(57 / 35)
    assert ns.placements(runs, []) == []  # no bounded fit: nothing to place against


def test_placement_and_change_known_answers():
    assert [pl.place(v, 10, 20) for v in (9.9, 10, 20, 20.1)] == [
        pl.BELOW, pl.INSIDE, pl.INSIDE, pl.ABOVE]
    t = pl.tally([(5, 10, 8, 12), (11, 10, 8, 12), (30, 10, 8, 12)])
    assert (t.n, t.below, t.inside, t.above) == (3, 1, 1, 1)
    assert (t.ratio_low, t.ratio_high) == (0.5, 3.0)
    assert pl.change((25, 8, 51), (35, 29, 45)) == pl.WITHIN  # the reference: no growth
    assert pl.change((10, 8, 12), (40, 30, 50)) == pl.GROWS
    assert pl.change((40, 30, 50), (10, 8, 12)) == pl.FALLS


def test_no_measurements_no_section(tmp_path):
    points = [make_point(64, 0, 4.0, 40.0), make_point(512, 0, 6.0, 20.0)]
    assert ns.compute(study_of(points, tmp_path), {}) is None


def test_section_with_saved_runs_measured_points_and_coupling_runs(tmp_path):
    os.makedirs(tmp_path / ns.RUNS_DIR / "coupling")
    series = {p: dict(steps=[10, 20], g2=[1.0, 1.0], trace=[30.0, 30.0], b_simple=[30.0, 30.0])
              for p in ("d", "g")}
    run = noise_scale_run(512, 20, summary(100.0, 300.0), series)
    (tmp_path / ns.RUNS_DIR / "bs0512.json").write_text(json.dumps(run))
    (tmp_path / ns.RUNS_DIR / "notes.json").write_text("[1, 2]")  # not a run: reported
    for name, shared, g in (("a_shared.json", True, 66.0), ("b_local.json", False, 55.0)):
        (tmp_path / ns.RUNS_DIR / "coupling" / name).write_text(json.dumps(noise_scale_run(
            64, 300, summary(4.0, g, "replicas"), bn_cross_replica=shared)))
    measured = make_point(64, 0, 4.0, 40.0)
    measured = records.Point(measured.dir, measured.config, measured.record.replace(
        noise_scale=records.NoiseScale.from_dict(summary(20.0, None))), measured.history)
    study = study_of([measured, make_point(512, 0, 6.0, 20.0)], tmp_path)
    result = ns.compute(study, {})
    assert result.counts == ns.Counts(runs=1, measured=1, budget=2, arm_points=0)
    assert [(m.batch, m.source) for m in result.measurements] == [
        (64, "sweep, seed 0"), (512, "noise-scale run (bs0512.json)")]
    assert result.measurements[1].command.endswith("noise-scale --batch-size 512")
    assert [(c.name, c.bn_cross_replica, c.g.b_simple) for c in result.coupling] == [
        ("a_shared.json", True, 66.0), ("b_local.json", False, 55.0)]
    md = ns.render(result, study)
    table = [line for line in md.splitlines() if line.startswith(("| 64 |", "| 512 |"))]
    assert table == ["| 64 | sweep, seed 0 | 100 | 20 [16, 26] | undefined | 16 / - |",
                     "| 512 | noise-scale run (bs0512.json) | 20 | 100 [80, 130] | "
                     "300 [240, 390] | 128 / 256 |"]
    assert "| b_local.json | 64 | 300 | replicas | per replica | 4 [3, 5] | 55 [44, 72] |" in md
    ns.draw(result, study)
    assert os.path.getsize(tmp_path / "report" / ns.FIGURE) > 1000
