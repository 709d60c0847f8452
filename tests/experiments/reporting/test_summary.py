"""Rows of the batch table and the arms they compare, from in-memory points."""
import math

import numpy as np
import pytest
from fake_results import make_point
from scipy import stats as sps

from experiments.reporting.lib import seeds as summary
from experiments.reporting.lib import stats as st
from experiments.reporting.sections import batch_table


def gmean_ratio(a, b):
    return sps.gmean(b) / sps.gmean(a)


def test_split_by_budget_keeps_controls_out_of_the_table():
    steps = [make_point(64, 0, 4.0, 40.0), make_point(512, 0, 6.0, 20.0, budget="equal_steps")]
    control = make_point(64, 0, 5.0, 30.0, steps=800, budget="equal_images")
    table, controls = summary.split_by_budget([*steps, control])
    assert table == steps and controls == [control]
    assert summary.budget(steps[0].record) == "equal_steps"  # unlabelled: older records
    # a sweep run wholly at equal images is its own table
    only_images = [make_point(b, 0, 4.0, 40.0, budget="equal_images") for b in (64, 512)]
    assert summary.split_by_budget(only_images) == (only_images, [])


def test_ratio_vs_baseline_is_welch_over_independent_seeds():
    a, b = [4.0, 4.3, 3.8], [6.1, 5.6, 6.4, 5.9]
    base = [make_point(64, s, v, 40.0).record for s, v in enumerate(a)]
    other = [make_point(512, s, v, 20.0).record for s, v in enumerate(b)]
    ci = summary.ratio_vs_baseline(base, other, "is")
    assert ci.method == st.WELCH and (ci.n_a, ci.n_b) == (3, 4)
    assert ci.ratio == pytest.approx(gmean_ratio(a, b))
    expected = sps.ttest_ind(np.log(b), np.log(a), equal_var=False)
    low, high = expected.confidence_interval(0.95)
    assert (ci.low, ci.high, ci.df) == pytest.approx((math.exp(low), math.exp(high),
                                                      expected.df))
    paired = summary.paired_vs_baseline(base, other, "is")  # seeds 0-2 only
    assert paired.method == st.PAIRED and paired.n_a == 3
    assert paired.ratio == pytest.approx(gmean_ratio(a, b[:3]))


def test_one_seed_each_uses_evaluation_replicates():
    base = [make_point(64, 0, 4.0, 40.0, replicates=(4.1, 3.9)).record]
    other = [make_point(512, 0, 6.0, 20.0, replicates=(6.2, 5.8)).record]
    ci = summary.ratio_vs_baseline(base, other, "is")
    assert ci.method == st.EVAL_RESAMPLING
    assert ci.ratio == pytest.approx(gmean_ratio([4.0, 4.1, 3.9], [6.0, 6.2, 5.8]))
    assert summary.paired_vs_baseline(base, other, "is") is None
    # no replicates and one seed: a single value, no interval
    lone = summary.ratio_vs_baseline([make_point(64, 0, 4.0, 40.0).record],
                                     [make_point(512, 0, 6.0, 20.0).record], "is")
    assert lone.ratio == pytest.approx(1.5) and not lone.has_interval
    assert summary.ratio_vs_baseline(base, [], "is") is None


def test_summarise_rows():
    points = [make_point(b, s, v + 0.2 * s, f + s, accuracy=0.5)
              for s in range(2) for b, v, f in ((64, 4.0, 40.0), (512, 6.0, 20.0))]
    points.append(make_point(128, 0, 0.0, 0.0, status="diverged"))
    rows = {r["batch"]: r for r in batch_table.summarise(points, 64)}
    assert list(rows) == [64, 128, 512]
    r = rows[512]
    assert (r["seeds"], r["done"], r["diverged"], r["steps"]) == (2, 2, 0, 100)
    assert r["is_mean"] == pytest.approx(6.1) and r["is_std_kind"] == "seeds"
    assert r["is_std"] == pytest.approx(np.std([6.0, 6.2], ddof=1))
    assert r["is_change_vs_baseline"] == pytest.approx(
        100 * (gmean_ratio([4.0, 4.2], [6.0, 6.2]) - 1))
    assert r["fid_ratio_ci"]["df"] is not None and r["acc_change_vs_baseline"] == pytest.approx(0.0)
    assert rows[128]["diverged"] == 1 and rows[128]["is_mean"] is None
    assert rows[64]["best_is"] == pytest.approx(4.1)  # the final is the best of a rising curve
