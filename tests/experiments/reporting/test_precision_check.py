"""Precisions never share a comparison: the report uses the float32 points and compares the
others with their float32 twins (same seeds and settings) in its precision check."""
import dataclasses
import os

import numpy as np
import pytest
from fake_results import fake_point, make_point, study_of

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


def markdown(points):
    study = study_of(points)
    rows = precision_check.compute(study, {})
    return "" if rows is None else precision_check.render(rows, study)


def test_a_shift_within_the_seed_spread_is_reported_as_such():
    f32, bf16 = twins({0: 4.05, 1: 4.15, 2: 4.1})
    rows = {r["metric"]: r for r in precision_check.check(f32 + bf16)}
    r = rows["is"]
    assert (r["batch"], r["seeds"], r["beyond_seed_spread"]) == (64, [0, 1, 2], False)
    assert r["float32_mean"] == pytest.approx(4.1) and r["float32_sd"] == pytest.approx(0.1)
    gmean = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
    assert r["interval"]["ratio"] == pytest.approx(gmean([4.05, 4.15, 4.1]) / gmean([4.0, 4.2,
                                                                                       4.1]))
    assert r["interval"]["low"] < 1 < r["interval"]["high"]
    md = markdown(f32 + bf16)
    assert "No score moves by more than the float32 seeds' spread." in md


def test_a_shift_beyond_the_seed_spread_is_said_plainly():
    f32, bf16 = twins({0: 4.5, 1: 4.6, 2: 4.4})
    md = markdown(f32 + bf16)
    assert "moves IS at batch 64 by more than the seed spread" in md
    assert "the study keeps float32 for its comparisons" in md


def test_only_common_seeds_and_settings_are_paired():
    f32, bf16 = twins({1: 4.2, 7: 4.0})  # seed 7 has no float32 twin
    other_steps = in_precision(make_point(64, 0, 4.0, 40.0, steps=200))
    rows = precision_check.check(f32 + bf16 + [other_steps])
    assert {r["steps"] for r in rows} == {100} and rows[0]["seeds"] == [1]
    assert precision_check.check(f32) == [] and markdown(f32) == ""
    lone = markdown([other_steps] + f32[1:])
    assert "none has a finished float32 twin" in lone


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
    md = out["markdown"]
    assert "precision float32" in md and "(3 in bfloat16) are left out" in md
    assert "## Precision check" in md and "moves IS at batch 64" in md
    assert out["analysis"]["precision_check"][0]["precision"] == "bfloat16"
