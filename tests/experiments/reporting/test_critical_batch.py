"""The report's noise-scale section: the critical batch measured from steps to target, the
prediction set against it (agreement and disagreement said plainly), the table, the figure,
and one line when the records carry no measurements."""
import json
import os

from fake_results import make_point, noise_scale_run

from experiments import records
from experiments.reporting.sections import noise_scale as ns


def summary(b_d, b_g, every=10):
    def est(b):
        return dict(measurements=12, window_start=130, b_simple=b,
                    ci_low=None if b is None else 0.8 * b, ci_high=None if b is None else 1.3 * b,
                    ema_mean=b, ema_std=None if b is None else 0.1 * b)
    return dict(estimator="B_simple ... arXiv 1812.06162", source="2 slices", every=every,
                ema_decay=0.9, window_fraction=0.5, batches={"d": [32, 64], "g": [32, 64]},
                d=est(b_d), g=est(b_g))


def measured(*b_crits):
    """A time-to-target section's results: fitted B_crit (interval 0.8x to 1.25x) per target."""
    return {"constant_lr": {"metrics": {"is_mean": [
        dict(target=3.0 + 0.5 * i, fit=dict(b_crit=b, b_crit_ci=[0.8 * b, 1.25 * b],
                                            at_bound=""))
        for i, b in enumerate(b_crits)] + [dict(target=9.0, fit=None)]}}}


def test_the_measured_side_is_the_fitted_critical_batch():
    fits = ns.measured_b_crit(measured(40.0, 80.0))
    assert [(m["target"], m["b_crit"], m["arm"]) for m in fits] == [
        (3.0, 40.0, "constant_lr"), (3.5, 80.0, "constant_lr")]
    assert ns.measured_b_crit(None) == [] and ns.measured_b_crit({}) == []


def test_comparison_says_plainly_whether_each_player_agrees():
    fits = ns.measured_b_crit(measured(40.0, 80.0))  # intervals 32 to 100
    agree = ns.comparison([dict(summary=summary(40.0, 64.0))], fits)
    assert "B_crit from 40 at IS 3.0 to 80 at IS 3.5" in agree
    assert "Predicted (the power of two nearest B_simple, per run): D 32, G 64." in agree
    assert "D's prediction agrees (within one doubling of the measured 32 to 100, where 1 of 1 " \
        "runs' predictions lie)" in agree
    assert "G's prediction agrees" in agree
    assert "two-player game" in agree and "one loss" in agree
    two_runs = [dict(summary=summary(4.0, 500.0)), dict(summary=summary(5.0, 700.0))]
    mixed = ns.comparison(two_runs, fits)
    assert "D 4" in mixed and "G 512" in mixed
    assert "D's prediction disagrees: more than one doubling below the measured 32 to 100" \
        in mixed
    assert "G's prediction disagrees: more than one doubling above the measured 32 to " \
        "100" in mixed
    # nothing measured yet: said, and nothing judged
    none = ns.comparison([dict(summary=summary(5.0, 400.0))], [])
    assert "Measured: nothing yet" in none and "an equal-steps comparison cannot give it" in none
    assert "D's prediction cannot be tested without a time-to-target arm" in none
    assert "D none, G none" in ns.comparison([dict(summary=summary(None, None))], fits)


def test_one_wide_interval_does_not_speak_for_the_other_targets():
    """The reference run's IS 3.0 fit is 25 [8, 51] and the others about 35 [29, 45]: D's 4 to
    8 comes within one doubling of the first only, and that must not read as agreement."""
    fits = [dict(target=3.0, b_crit=25.0, ci=[8.0, 51.0], arm="a"),
            dict(target=3.5, b_crit=33.0, ci=[28.0, 39.0], arm="a"),
            dict(target=7.0, b_crit=35.0, ci=[29.0, 45.0], arm="a")]
    runs = [dict(summary=summary(4.0, 64.0)), dict(summary=summary(8.0, 256.0)),
            dict(summary=summary(6.0, 128.0))]
    text = ns.comparison(runs, fits)
    assert "D's prediction agrees at only 1 of 3 IS targets (IS 3.0: within one doubling of " \
        "the measured 8 to 51, where 3 of 3 runs' predictions lie) and is more than one " \
        "doubling below the measured 28 to 45 at the others" in text
    # G's span 64 to 256 reaches every target's interval, but only the run predicting 64
    # lies within one doubling of 8 to 51 (up to 102)
    assert "G's prediction agrees (within one doubling of the measured 8 to 51, where 1 of 3 " \
        "runs' predictions lie)" in text


def test_section_without_measurements_is_one_line(tmp_path):
    points = [make_point(64, 0, 4.0, 40.0), make_point(512, 0, 6.0, 20.0)]
    md = ns.critical_batch_markdown(points, str(tmp_path), str(tmp_path / "report"))
    body = [line for line in md.splitlines()[1:] if line]
    assert md.startswith("## ") and len(body) == 1 and "no noise-scale measurements" in body[0]
    assert not os.path.exists(tmp_path / "report" / ns.FIGURE)


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
    md = ns.critical_batch_markdown([measured, make_point(512, 0, 6.0, 20.0)], str(tmp_path),
                                    str(tmp_path / "report"))
    table = [line for line in md.splitlines() if line.startswith("| 64") or
             line.startswith("| 512")]
    assert table == ["| 64 | sweep, seed 0 | 100 | 20 [16, 26] | undefined | 16 / - |",
                     "| 512 | noise-scale run (bs0512.json) | 20 | 100 [80, 130] | "
                     "300 [240, 390] | 128 / 256 |"]
    assert "    python -m experiments noise-scale --batch-size 512" in md
    assert os.path.getsize(tmp_path / "report" / ns.FIGURE) > 1000
