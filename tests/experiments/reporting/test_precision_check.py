"""Precisions never share a comparison: the report uses the float32 points and compares the
others with their float32 twins (same seeds and settings) in its precision check."""
import dataclasses
import os

import pytest
from fake_results import fake_point, make_point, study_of
from scipy.stats import gmean

from experiments import records
from experiments.reporting import report
from experiments.reporting.sections import precision as precision_check

F32_IS = {0: 4.0, 1: 4.2, 2: 4.1}  # seed spread: sd 0.1


def in_precision(point, precision="bfloat16"):
    cfg = point.config.with_overrides({"train.precision": precision})
    name = os.path.basename(point.dir) + "_" + precision
    return dataclasses.replace(point, config=cfg, dir=os.path.join(os.path.dirname(point.dir),
                                                                   name))


def twins(bf16_is, batch=64, root=""):
    f32 = [make_point(batch, s, v, 40.0, accuracy=0.5, root=root) for s, v in F32_IS.items()]
    bf16 = [in_precision(make_point(batch, s, v, 40.0, accuracy=0.5, root=root))
            for s, v in bf16_is.items()]
    return f32, bf16


def test_the_comparisons_keep_float32_and_count_what_they_left_out():
    f32, bf16 = twins({0: 9.0, 1: 9.0})
    study = study_of(f32 + bf16)
    assert study.compared == f32 and study.other_precisions == {"bfloat16": 2}
    assert study_of(bf16).compared == bf16  # no float32: the precision there is
    assert study_of(f32).other_precisions == {}


def test_a_shift_within_the_seed_spread_is_reported_as_such():
    f32, bf16 = twins({0: 4.05, 1: 4.15, 2: 4.1})
    r = {r.metric: r for r in precision_check.check(f32 + bf16)}["is"]
    assert (r.batch, r.seeds, r.beyond_seed_spread) == (64, [0, 1, 2], False)
    assert (r.float32_mean, r.float32_sd) == pytest.approx((4.1, 0.1))
    assert r.interval.ratio == pytest.approx(gmean([4.05, 4.15, 4.1]) / gmean([4.0, 4.2, 4.1]))
    assert r.interval.low < 1 < r.interval.high


def test_a_shift_beyond_the_seed_spread_is_counted():
    f32, bf16 = twins({0: 4.5, 1: 4.6, 2: 4.4})
    rows = precision_check.check(f32 + bf16)
    assert [r.beyond_seed_spread for r in rows] == [True, False, False]  # IS, FID, accuracy
    study = study_of(f32 + bf16)
    assert precision_check.COUNTS.format(yes=1, judged=3, n=3) in precision_check.render(
        precision_check.compute(study, {}), study)


def test_only_common_seeds_and_settings_are_paired():
    f32, bf16 = twins({1: 4.2, 7: 4.0})  # seed 7 has no float32 twin
    other_steps = in_precision(make_point(64, 0, 4.0, 40.0, steps=200))
    rows = precision_check.check(f32 + bf16 + [other_steps])
    assert {r.steps for r in rows} == {100} and rows[0].seeds == [1]
    assert rows[0].float32_sd is None and rows[0].beyond_seed_spread is None  # one seed
    assert precision_check.compute(study_of(f32), {}) is None  # one precision: no section
    lone = study_of([other_steps] + f32[1:])
    assert precision_check.compute(lone, {}) == []
    assert precision_check.NO_TWINS in precision_check.render([], lone)


def test_the_report_tables_ignore_bfloat16_points_and_add_the_check(tmp_path):
    root = str(tmp_path)
    for seed, v in F32_IS.items():
        fake_point(root, 64, seed, v, 40.0)
        fake_point(root, 512, seed, v + 2, 20.0)
    for point in twins({0: 9.0, 1: 9.1, 2: 9.2}, root=root)[1]:
        records.write_config(point.dir, point.config)
        records.write_history(point.dir, point.history)
        records.write_record(point.dir, point.record)
    out = report.write_report(root)
    rows = {r["batch"]: r for r in out["rows"]}
    assert rows[64]["is_mean"] == pytest.approx(4.1) and rows[64]["is_std"] == pytest.approx(0.1)
    assert "precision float32" in out["markdown"] and "(3 in bfloat16)" in out["markdown"]
    [is_row, *_] = out["analysis"]["precision_check"]
    assert (is_row["precision"], is_row["metric"], is_row["beyond_seed_spread"]) == (
        "bfloat16", "is", True)
