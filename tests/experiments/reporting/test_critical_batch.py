"""The report's noise-scale section: the measured critical batch from IS gains per doubling,
the prediction set against it (agreement and disagreement said plainly), the table, the figure,
and one line when the records carry no measurements."""
import json
import os

import pytest
from fake_results import make_point

from experiments import records
from experiments.reporting import critical_batch as ns

V2_IS = {8: 2.812, 16: 2.665, 32: 3.166, 64: 3.738, 128: 4.264, 256: 5.126, 512: 5.582}


def rows(is_by_batch):
    return [dict(batch=b, is_mean=v) for b, v in sorted(is_by_batch.items())]


def summary(b_d, b_g, every=10):
    def est(b):
        return dict(measurements=12, window_start=130, b_simple=b,
                    ci_low=None if b is None else 0.8 * b, ci_high=None if b is None else 1.3 * b,
                    ema_mean=b, ema_std=None if b is None else 0.1 * b)
    return dict(estimator="B_simple ... arXiv 1812.06162", source="2 slices", every=every,
                ema_decay=0.9, window_fraction=0.5, batches={"d": [32, 64], "g": [32, 64]},
                d=est(b_d), g=est(b_g))


def test_gains_per_doubling_by_hand():
    gains = ns.gains_per_doubling(rows({8: 1.0, 16: 2.0, 64: 2.5}))
    assert [(g["low"], g["high"]) for g in gains] == [(8, 16), (16, 64)]
    assert [g["gain"] for g in gains] == pytest.approx([1.0, 0.25])  # 0.5 over two doublings


def test_measured_critical_batch_is_where_the_gain_falls_below_half_its_peak():
    batch, how = ns.measured_critical_batch(rows({8: 1.0, 16: 2.0, 32: 3.0, 64: 3.2, 128: 3.3}))
    assert batch == 32  # gains 1, 1, 0.2, 0.1: the first below 0.5 starts at 32
    assert "peaks at +1.00 (8 -> 16)" in how and "falls to +0.20 from 32 to 64" in how
    # the committed v2 sweep: peak +0.86 (128 -> 256), then +0.46 (256 -> 512) > 0.43
    batch, how = ns.measured_critical_batch(rows(V2_IS))
    assert batch is None and "stays above half of it up to the largest batch, 512" in how
    assert ns.measured_critical_batch(rows({8: 3.0, 16: 2.0}))[0] is None


def test_comparison_says_plainly_whether_each_player_agrees():
    falls_at_32 = rows({8: 1.0, 16: 2.0, 32: 3.0, 64: 3.2, 128: 3.3})
    agree = ns.comparison([dict(summary=summary(20.0, 40.0))], falls_at_32)
    assert "so the measured critical batch is 32" in agree
    assert "Predicted (the power of two nearest B_simple, per run): D 16, G 32." in agree
    assert "D's prediction agrees (within one doubling); G's agrees" in agree
    assert "two-player game" in agree and "one loss" in agree
    two_runs = [dict(summary=summary(20.0, 500.0)), dict(summary=summary(10.0, 700.0))]
    mixed = ns.comparison(two_runs, falls_at_32)
    assert "D 8 to 16, G 512" in mixed
    assert "D's prediction agrees" in mixed and "G's disagrees (more than one doubling" in mixed
    # v2 keeps gaining up to 512: a prediction of 16 is contradicted, one of 512 is not
    v2 = ns.comparison([dict(summary=summary(5.0, 400.0))], rows(V2_IS))
    assert "D's prediction disagrees: it puts diminishing returns well below" in v2
    assert "G's does not contradict it" in v2
    assert "D none, G none" in ns.comparison([dict(summary=summary(None, None))], rows(V2_IS))


def test_section_without_measurements_is_one_line(tmp_path):
    points = [make_point(64, 0, 4.0, 40.0), make_point(512, 0, 6.0, 20.0)]
    md = ns.critical_batch_markdown(points, rows({64: 4.0, 512: 6.0}), str(tmp_path),
                                 str(tmp_path / "report"))
    body = [line for line in md.splitlines()[1:] if line]
    assert md.startswith("## ") and len(body) == 1 and "no noise-scale measurements" in body[0]
    assert not os.path.exists(tmp_path / "report" / ns.FIGURE)


def test_section_with_saved_runs_and_measured_points(tmp_path):
    os.makedirs(tmp_path / ns.RUNS_DIR)
    series = {p: dict(steps=[10, 20], g2=[1.0, 1.0], trace=[30.0, 30.0], b_simple=[30.0, 30.0])
              for p in ("d", "g")}
    run = dict(global_batch_size=512, steps=20, noise_scale=summary(100.0, 300.0),
               series=series, command="python -m experiments noise-scale --batch-size 512")
    (tmp_path / ns.RUNS_DIR / "bs0512.json").write_text(json.dumps(run))
    (tmp_path / ns.RUNS_DIR / "notes.json").write_text("[1, 2]")  # not a run: ignored
    measured = make_point(64, 0, 4.0, 40.0)
    measured = records.Point(measured.dir, measured.config, measured.record.replace(
        noise_scale=records.NoiseScale.from_dict(summary(20.0, None))), measured.history)
    md = ns.critical_batch_markdown([measured, make_point(512, 0, 6.0, 20.0)],
                                 rows({64: 4.0, 512: 6.0}), str(tmp_path),
                                 str(tmp_path / "report"))
    table = [line for line in md.splitlines() if line.startswith("| 64") or
             line.startswith("| 512")]
    assert table == ["| 64 | sweep, seed 0 | 100 | 20 [16, 26] | undefined | 16 / - |",
                     "| 512 | noise-scale run (bs0512.json) | 20 | 100 [80, 130] | "
                     "300 [240, 390] | 128 / 256 |"]
    assert "    python -m experiments noise-scale --batch-size 512" in md
    assert os.path.getsize(tmp_path / "report" / ns.FIGURE) > 1000
