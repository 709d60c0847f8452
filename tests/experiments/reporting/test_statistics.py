"""The report's statistics on constructed data with known answers: hand computations and
brute-force enumeration, independent of the code under test."""
import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from experiments.reporting.lib import stats as st
from experiments.reporting.lib.metrics import Description, describe


def hand_welch(a, b):
    """Welch (1947) by hand on log values: centre, standard error, Satterthwaite df."""
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    half = sps.t.ppf(0.975, df) * math.sqrt(va + vb)
    centre = lb.mean() - la.mean()
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half), df


def test_welch_interval_matches_a_hand_computation():
    a, b = np.array([4.0, 4.4, 3.9]), np.array([6.0, 6.5, 5.7, 6.1])
    ci = st.welch_ratio(a, b)
    ratio, low, high, df = hand_welch(a, b)
    assert (ci.ratio, ci.low, ci.high, ci.df) == pytest.approx((ratio, low, high, df))
    # the point estimate is the ratio of geometric means, inside its own interval
    assert ci.ratio == pytest.approx(sps.gmean(b) / sps.gmean(a))
    assert ci.low < ci.ratio < ci.high
    assert (ci.n_a, ci.n_b, ci.method) == (3, 4, st.WELCH)
    t = (math.log(ratio)) / math.sqrt(np.log(a).var(ddof=1) / 3 + np.log(b).var(ddof=1) / 4)
    assert ci.p_value == pytest.approx(2 * sps.t.sf(abs(t), df))


def test_welch_on_the_reference_run_numbers():
    """IS of the v2 reference run, batch 64 and 512 (seeds 0-2): +49.2%, df 3.1."""
    a = [3.8910885011619785, 3.722287063638061, 3.6013948872055885]
    b = [6.010971201104067, 5.233262323801894, 5.503233721760742]
    ci = st.welch_ratio(a, b)
    assert ci.ratio == pytest.approx(1.4916, abs=1e-4)
    assert ci.df == pytest.approx(3.12, abs=0.01)
    assert ci.low == pytest.approx(hand_welch(np.array(a), np.array(b))[1])


def test_paired_interval_matches_a_hand_computation():
    a, b = np.array([2.4, 2.8, 3.1]), np.array([2.6, 3.0, 3.5])
    d = np.log(b) - np.log(a)
    half = sps.t.ppf(0.975, 2) * d.std(ddof=1) / math.sqrt(3)
    ci = st.paired_ratio(a, b)
    assert (ci.ratio, ci.low, ci.high, ci.df) == pytest.approx(
        (math.exp(d.mean()), math.exp(d.mean() - half), math.exp(d.mean() + half), 2))
    assert ci.method == st.PAIRED
    with pytest.raises(ValueError, match="equal lengths"):
        st.paired_ratio([1.0, 2.0], [1.0, 2.0, 3.0])


def test_pairing_narrows_the_interval_when_seeds_share_an_effect():
    rng = np.random.default_rng(2)
    seed_effect = rng.normal(0, 0.2, size=8)
    a = np.exp(np.log(5.0) + seed_effect + rng.normal(0, 0.01, 8))
    b = np.exp(np.log(6.0) + seed_effect + rng.normal(0, 0.01, 8))
    paired, welch = st.paired_ratio(a, b), st.welch_ratio(a, b)
    assert paired.high - paired.low < 0.2 * (welch.high - welch.low)
    assert paired.low > 1.0 and welch.low < 1.2 < welch.high


def test_degenerate_and_invalid_ratios():
    single = st.welch_ratio([4.0], [6.0])
    assert single.ratio == pytest.approx(1.5) and not single.has_interval
    assert single.method == st.SINGLE and single.df is None
    flat = st.welch_ratio([2.0, 2.0], [3.0, 3.0])  # no spread: the ratio is exact
    assert (flat.ratio, flat.low, flat.high) == pytest.approx((1.5, 1.5, 1.5))
    with pytest.raises(ValueError, match="finite"):
        st.welch_ratio([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        st.welch_ratio([1.0, -1.0], [1.0, 2.0])


def brute_force_mann_whitney_p(a, b):
    """Two-sided exact p by enumerating every split of the pooled values into the arm sizes."""
    pooled, n_a = np.concatenate([a, b]), len(a)

    def u_of(b_values, a_values):
        return sum((x > y) + 0.5 * (x == y) for x in b_values for y in a_values)

    observed = u_of(b, a)
    centre = len(a) * len(b) / 2
    us = []
    for idx in itertools.combinations(range(len(pooled)), n_a):
        rest = [i for i in range(len(pooled)) if i not in idx]
        us.append(u_of(pooled[rest], pooled[list(idx)]))
    us = np.array(us)
    return float(np.mean(np.abs(us - centre) >= abs(observed - centre) - 1e-12)), observed


@pytest.mark.parametrize("a, b", [
    ([3.6, 3.7, 3.9, 3.8, 3.5, 4.1], [5.2, 5.5, 6.0, 5.9, 5.1, 5.4]),  # complete separation
    ([3.6, 3.7, 3.9, 3.8, 3.5], [3.75, 5.5, 3.4, 5.9, 5.1, 3.85]),  # overlap, 5 vs 6
])
def test_exact_test_matches_enumeration(a, b):
    a, b = np.array(a), np.array(b)
    e = st.exact_test(a, b)
    p, u = brute_force_mann_whitney_p(a, b)
    assert e.ran and e.u == pytest.approx(u) and e.p_value == pytest.approx(p)
    assert e.smallest_p == pytest.approx(2 / math.comb(len(a) + len(b), len(a)))


def test_exact_test_runs_only_where_p_below_0_05_is_attainable_and_states_its_floor():
    e = st.exact_test([3.6, 3.7, 3.9], [5.2, 5.5, 6.0])
    assert not e.ran and e.p_value is None
    assert e.smallest_p == pytest.approx(0.1)  # 2 of the 20 splits of 3 vs 3
    assert st.smallest_exact_p(6, 6) == pytest.approx(2 / 924)
    # 3 vs 6 can reach 2/84 = 0.024: the test runs (complete separation gives the floor)
    e = st.exact_test([3.6, 3.7, 3.9], [5.2, 5.5, 6.0, 5.1, 5.3, 5.8])
    assert e.ran and e.p_value == pytest.approx(2 / 84)
    assert not st.exact_test([1.0, 2.0], [3.0, 4.0, 5.0, 6.0]).ran  # floor 2/15 = 0.13


def test_holm_against_a_hand_computation():
    adjusted = st.holm({"fid": 0.04, "acc": 0.01, "kid": 0.03})
    # sorted 0.01, 0.03, 0.04: x3, x2, x1, then running maximum
    assert adjusted == pytest.approx({"acc": 0.03, "kid": 0.06, "fid": 0.06})
    assert st.holm({"fid": 0.02, "acc": 0.7}) == pytest.approx({"fid": 0.04, "acc": 0.7})
    assert st.holm({"fid": 0.6}) == {"fid": 0.6}


def interval(change_pct, low_pct, high_pct, df=10.0):
    return st.RatioInterval(1 + change_pct / 100, 1 + low_pct / 100, 1 + high_pct / 100, 6, 6,
                            st.WELCH, df, 0.01)


D, S, R = st.Direction, st.Size, st.Rule


@pytest.mark.parametrize("change, low, high, higher, direction, size", [
    (5, 1, 9, True, D.REPRODUCED, S.SMALLER),  # significant, but smaller than the paper's +50%
    (49, 29, 72, True, D.REPRODUCED, S.CONSISTENT),
    (80, 60, 95, True, D.REPRODUCED, S.LARGER),
    (10, -5, 30, True, D.INCONCLUSIVE, S.SMALLER),
    (-20, -30, -10, True, D.OPPOSITE, S.SMALLER),
    (-39, -56, -16, False, D.REPRODUCED, None),
    (25, 5, 50, False, D.OPPOSITE, None),
    (-10, -30, 5, False, D.INCONCLUSIVE, None),
])
def test_direction_and_size_follow_the_rule(change, low, high, higher, direction, size):
    v = st.verdict(interval(change, low, high), higher, (3, 3), 50 if higher else None)
    assert (v.direction, v.size) == (direction, size)
    assert v.rule == (R.INTERVAL_AND_SIZE if higher else R.INTERVAL)


def test_one_training_seed_gives_no_verdict():
    ci = st.RatioInterval(1.5, 1.45, 1.55, 3, 3, st.EVAL_RESAMPLING, 4.0, 0.001)
    for seeds in ((1, 1), (1, 3)):
        assert st.verdict(ci, True, seeds, paper_change=50) == st.Verdict(D.NO_VERDICT, None,
                                                                          R.SEEDS)


def test_holm_adjusted_p_decides_a_secondary_metric():
    ci = interval(-20, -35, -2)  # its 95% interval clears 1 ...
    assert st.verdict(ci, False, (3, 3)).direction == D.REPRODUCED
    held = st.verdict(ci, False, (3, 3), adjusted_p=0.08)  # ... Holm does not
    assert (held.direction, held.rule) == (D.INCONCLUSIVE, R.HOLM)
    assert st.verdict(ci, False, (3, 3), adjusted_p=0.01).direction == D.REPRODUCED


def test_line_fit_and_lack_of_fit_against_independent_references():
    batches = np.repeat([8, 16, 32, 64, 128, 256, 512], 3)
    x = np.log2(batches)
    rng = np.random.default_rng(3)
    bent = np.where(x < 6, 3.0, 3.0 + 0.6 * (x - 6)) + rng.normal(0, 0.1, len(x))
    fit = st.line_fit(batches, bent)
    slope, intercept = np.polyfit(x, bent, 1)
    resid = bent - (slope * x + intercept)
    se = math.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) ** 2).sum())
    q = sps.t.ppf(0.975, len(x) - 2)
    assert (fit.slope, fit.slope_low, fit.slope_high) == pytest.approx(
        (slope, slope - q * se, slope + q * se))
    # lack of fit as a nested-model F test: line vs one mean per batch size (least squares)
    levels = np.unique(x)
    means_design = (x[:, None] == levels[None, :]).astype(float)
    rss_means = np.linalg.lstsq(means_design, bent, rcond=None)[1][0]
    rss_line = resid @ resid
    f = ((rss_line - rss_means) / (len(levels) - 2)) / (rss_means / (len(x) - len(levels)))
    assert fit.lack_of_fit_f == pytest.approx(f)
    assert fit.lack_of_fit_p == pytest.approx(sps.f.sf(f, 5, 14))
    assert fit.lack_of_fit_p < 0.001 and fit.fits is False  # a bent curve is not a line
    upper = st.line_fit(batches, bent, 64, 512)  # the straight part
    assert (upper.first, upper.last, upper.n, upper.levels) == (64, 512, 12, 4)
    assert upper.slope == pytest.approx(0.6, abs=0.1) and upper.fits is True
    with pytest.raises(ValueError, match="at least 3 points"):
        st.line_fit([8, 16], [1.0, 2.0])


def test_exact_spearman_matches_enumeration():
    levels = np.array([8, 16, 32, 64, 128, 256, 512])
    means = np.array([2.81, 2.67, 3.17, 3.74, 4.26, 5.13, 5.58])
    observed = abs(sps.spearmanr(levels, means).statistic)
    rhos = [abs(sps.spearmanr(levels, p).statistic) for p in itertools.permutations(means)]
    expected = np.mean(np.array(rhos) >= observed - 1e-12)
    assert st.spearman_p(levels, means) == pytest.approx(expected)
    assert st.spearman_p(levels, np.sort(means)) == pytest.approx(2 / 5040)


def test_trend_reports_the_monte_carlo_floor_as_a_bound():
    batches = np.repeat([8, 16, 32, 64, 128, 256, 512], 3)
    x = np.log2(batches)
    rng = np.random.default_rng(4)
    values = np.exp(0.7 + 0.2 * x + rng.normal(0, 0.02, len(x)))  # +22% per doubling
    t = st.trend_test(batches, values, baseline=64)
    assert t.spearman_rho == pytest.approx(sps.spearmanr(x, values).statistic)
    assert t.spearman_p_at_floor and t.spearman_p == pytest.approx(1 / (st.RESAMPLES + 1))
    assert t.means_n == 7 and t.means_p == pytest.approx(2 / 5040)
    assert [f.span for f in t.lines] == ["8..512", "8..64", "64..512"]
    assert t.lines[0].slope == pytest.approx(0.2, abs=0.01)  # fitted on log values


def test_few_distinct_orderings_are_enumerated_exactly():
    """rho = 1 over 5 distinct batch sizes: 2 of the 120 orderings reach |rho| = 1."""
    t = st.trend_test([8, 16, 32, 64, 128], [1.0, 2.0, 3.0, 4.0, 5.0])
    assert t.spearman_p == pytest.approx(2 / 120) and not t.spearman_p_at_floor
    with pytest.raises(ValueError, match="at least 3 points"):
        st.trend_test([8, 16], [1.0, 2.0])


def test_describe_gives_mean_sd_cv_and_geometric_mean_of_the_finite_values():
    d = describe([10.0, 11.0, None, 12.0, float("nan")])
    assert (d.n, d.mean, d.sd, d.cv) == (3, 11.0, pytest.approx(1.0), pytest.approx(1 / 11))
    assert d.geomean == pytest.approx(sps.gmean([10.0, 11.0, 12.0]))
    assert describe([-1.0, 2.0]).geomean is None and describe([2.0]).sd is None
    assert describe([]) == Description(0, None, None, None)
