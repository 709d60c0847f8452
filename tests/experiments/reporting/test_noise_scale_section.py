"""The noise-scale section: saved runs and measured points in one table, and each B_simple
placed against the fitted B_crit intervals (counts, not clauses)."""
import json
import os

import pytest
from fake_results import make_point, noise_scale_run, study_of

from experiments import records
from experiments.reporting.lib import placement as pl
from experiments.reporting.sections import noise_scale as ns


def summary(b_d, b_g, every=10):
    def est(b):
        return dict(measurements=12, window_start=130, b_simple=b,
                    ci_low=None if b is None else 0.8 * b, ci_high=None if b is None else 1.3 * b,
                    ema_mean=b, ema_std=None if b is None else 0.1 * b)
    return dict(estimator="B_simple ... arXiv 1812.06162", source="2 slices", every=every,
                ema_decay=0.9, window_fraction=0.5, batches={"d": [32, 64], "g": [32, 64]},
                d=est(b_d), g=est(b_g))


def ttt_result(*fits):
    """A time-to-target section's results: (target, B_crit, low, high) per fitted IS target."""
    return {"constant_lr": {"metrics": {"is_mean": [
        dict(target=t, fit=dict(b_crit=b, b_crit_ci=[lo, hi], at_bound=""))
        for t, b, lo, hi in fits] + [dict(target=9.0, fit=None)]}}}


# the reference run's fits: 25 [8, 51] at IS 3.0, about 35 [29, 45] above
REFERENCE = ((3.0, 25.0, 8.0, 51.0), (3.5, 33.0, 28.0, 39.0), (7.0, 35.0, 29.0, 45.0))


def test_each_reading_is_placed_against_every_fitted_interval():
    runs = [dict(source="run a", batch=64, summary=summary(5.0, 57.0)),
            dict(source="run b", batch=512, summary=summary(30.0, None))]
    placed = {(p["source"], p["player"]): p for p in
              ns.placements(runs, ttt_result(*REFERENCE), "constant_lr")}
    assert sorted(placed) == [("run a", "d"), ("run a", "g"), ("run b", "d")]  # G undefined
    assert [placed["run a", "d"][k] for k in ("n", "below", "inside", "above")] == [3, 3, 0, 0]
    assert [placed["run a", "g"][k] for k in ("n", "below", "inside", "above")] == [3, 0, 0, 3]
    assert [placed["run b", "d"][k] for k in ("below", "inside", "above")] == [0, 3, 0]
    assert placed["run a", "g"]["ratio_low"] == pytest.approx(57 / 35)
    assert ns.placements(runs, None, None) == [] and ns.placements(runs, {}, "x") == []


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


def test_section_with_saved_runs_and_measured_points(tmp_path):
    os.makedirs(tmp_path / ns.RUNS_DIR)
    series = {p: dict(steps=[10, 20], g2=[1.0, 1.0], trace=[30.0, 30.0], b_simple=[30.0, 30.0])
              for p in ("d", "g")}
    run = noise_scale_run(512, 20, summary(100.0, 300.0), series)
    (tmp_path / ns.RUNS_DIR / "bs0512.json").write_text(json.dumps(run))
    (tmp_path / ns.RUNS_DIR / "notes.json").write_text("[1, 2]")  # not a run: reported
    measured = make_point(64, 0, 4.0, 40.0)
    measured = records.Point(measured.dir, measured.config, measured.record.replace(
        noise_scale=records.NoiseScale.from_dict(summary(20.0, None))), measured.history)
    study = study_of([measured, make_point(512, 0, 6.0, 20.0)], tmp_path)
    result = ns.compute(study, {})
    md = ns.render(result, study)
    ns.draw(result, study)
    table = [line for line in md.splitlines() if line.startswith("| 64") or
             line.startswith("| 512")]
    assert table == ["| 64 | sweep, seed 0 | 100 | 20 [16, 26] | undefined | 16 / - |",
                     "| 512 | noise-scale run (bs0512.json) | 20 | 100 [80, 130] | "
                     "300 [240, 390] | 128 / 256 |"]
    assert "    python -m experiments noise-scale --batch-size 512" in md
    assert result["counts"] == dict(runs=1, measured=1, budget=2, arm_points=0)
    assert os.path.getsize(tmp_path / "report" / ns.FIGURE) > 1000
