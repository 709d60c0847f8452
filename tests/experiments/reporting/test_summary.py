"""The batch table from in-memory points: the arms it compares, its typed rows and their
summary.json form, and its cells in Markdown, CSV and LaTeX."""
import csv
import io
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


@pytest.fixture
def points():
    return [make_point(b, s, v + 0.2 * s, f + 5 * s, accuracy=0.5 + 0.1 * s)
            for s in range(2) for b, v, f in ((64, 4.0, 40.0), (512, 6.0, 20.0))]


def test_batch_rows_and_their_summary_json_form(points):
    rows = {r.batch: r for r in batch_table.batch_rows(
        points + [make_point(128, 0, 0.0, 0.0, status="diverged")], 64)}
    assert list(rows) == [64, 128, 512]
    r = rows[512]
    assert (r.seeds, r.done, r.diverged, r.steps, r.is_std_kind) == (2, 2, 0, 100, "seeds")
    assert (r.scores["is"].mean, r.scores["is"].sd) == pytest.approx((6.1, np.std([6.0, 6.2],
                                                                                  ddof=1)))
    assert r.ratios["is"].ratio == pytest.approx(gmean_ratio([4.0, 4.2], [6.0, 6.2]))
    assert r.ratios["acc"].ratio == pytest.approx(1.0)
    assert rows[128].diverged == 1 and rows[128].scores["is"].mean is None
    assert rows[64].best_is == pytest.approx(4.1)  # the final is the best of a rising curve
    row = batch_table.summarise(points, 64)[1]
    assert (row["is_mean"], row["is_std"], row["kid"]) == (r.scores["is"].mean,
                                                           r.scores["is"].sd, 0.01)
    assert row["is_change_vs_baseline"] == pytest.approx(100 * (r.ratios["is"].ratio - 1))
    assert row["fid_ratio_ci"] == batch_table.json_values(r.ratios["fid"])


def test_cells_show_change_interval_and_df():
    ci = dict(ratio=1.492, low=1.291, high=1.723, df=3.12)
    row = dict(batch=512, is_change_vs_baseline=49.2, is_ratio_ci=ci)
    assert batch_table._ratio(row, "is", 64) == "+49.2% [+29.1, +72.3] df 3.1"
    assert batch_table._ratio(dict(row, batch=64), "is", 64) == "baseline"
    no_interval = dict(row, is_ratio_ci=dict(ci, low=float("nan"), high=float("nan"), df=None))
    assert batch_table._ratio(no_interval, "is", 64) == "+49.2%"
    assert batch_table._ratio(dict(batch=512, is_change_vs_baseline=None), "is", 64) == "-"
    assert (batch_table._fmt(1122.92, 0, 105.0), batch_table._fmt(None)) == ("1123 ± 105", "-")


def test_markdown_csv_and_latex(points):
    rows = batch_table.summarise(points, 64)
    md = batch_table.markdown_table(rows, points, "fashion_mnist", 64)
    cells = batch_table.table_cells(rows, 64)[1]
    assert "| " + " | ".join(cells) + " |" in md
    assert cells[:3] == ["512", "2", "6.10 ± 0.14"] and cells[5] == "0.550 ± 0.071"
    assert cells[10].startswith("+48.8% [") and " df " in cells[10]
    assert "Protocol: fashion_mnist_classifier (abc), 500 generated vs 1000 real" in md
    parsed = list(csv.DictReader(io.StringIO(batch_table.csv_table(rows))))
    assert [r["batch"] for r in parsed] == ["64", "512"]
    assert float(parsed[1]["is_ratio_low"]) == pytest.approx(rows[1]["is_ratio_ci"]["low"])
    assert float(parsed[1]["is_ratio_df"]) == pytest.approx(rows[1]["is_ratio_ci"]["df"])
    assert "is_ratio_ci" not in parsed[0] and "other_bn_modes" not in parsed[0]
    tex = batch_table.latex_table(rows, points, 64)
    assert tex.startswith(r"\begin{tabular}{" + "r" * len(batch_table.columns(64)) + "}")
    assert r"6.10 $\pm$ 0.14" in tex and r"+48.8\%" in tex
    assert batch_table.csv_table([]) == "\r\n"
