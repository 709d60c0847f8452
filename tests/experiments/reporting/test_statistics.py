"""The report's statistics on synthetic data with known answers, against independent references."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from experiments.reporting import statistics as st


def test_bootstrap_finds_a_known_ratio():
    rng = np.random.default_rng(0)
    a = rng.normal(4.0, 0.2, size=40)
    b = rng.normal(6.0, 0.3, size=40)  # true ratio 1.5
    ci = st.ratio_interval(a, b, paired=False)
    assert ci.low < 1.5 < ci.high and ci.low > 1.0
    assert ci.ratio == pytest.approx(b.mean() / a.mean())
    assert ci.method == st.UNPAIRED


def test_equal_groups_give_an_interval_around_one():
    rng = np.random.default_rng(1)
    a, b = rng.normal(4.0, 0.3, size=(2, 30))
    ci = st.ratio_interval(a, b, paired=False)
    assert ci.low < 1.0 < ci.high


def test_pairing_by_seed_removes_the_shared_seed_effect():
    rng = np.random.default_rng(2)
    seed_effect = rng.normal(0, 1.0, size=8)  # large, shared by both batch sizes
    a = 5.0 + seed_effect + rng.normal(0, 0.05, 8)
    b = 6.0 + seed_effect + rng.normal(0, 0.05, 8)
    paired = st.ratio_interval(a, b)  # equal lengths: paired
    unpaired = st.ratio_interval(a, b, paired=False)
    assert paired.method == st.PAIRED
    assert (paired.high - paired.low) < 0.3 * (unpaired.high - unpaired.low)
    assert paired.low > 1.0


def test_one_seed_interval_comes_from_evaluation_replicates():
    ci = st.ratio_interval([4.0, 4.1, 3.9], [6.0, 6.2, 5.9], one_seed_replicates=True)
    assert ci.method == st.EVAL_RESAMPLING and ci.low > 1.4
    single = st.ratio_interval([4.0], [6.0])
    assert single.ratio == 1.5 and math.isnan(single.low)
    with pytest.raises(ValueError, match="finite"):
        st.ratio_interval([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ValueError, match="equal lengths"):
        st.ratio_interval([1.0, 2.0], [1.0, 2.0, 3.0], paired=True)


def test_trend_test_against_numpy_and_scipy_references():
    batches = np.repeat([8, 16, 32, 64, 128, 256, 512], 3)
    x = np.log2(batches)
    exact = 2.0 + 0.5 * x
    t = st.trend_test(batches, exact)
    assert t.spearman_rho == pytest.approx(1.0)
    assert t.slope_per_doubling == pytest.approx(0.5)
    assert t.slope_high - t.slope_low < 1e-9
    rng = np.random.default_rng(3)
    noisy = exact + rng.normal(0, 0.4, size=len(x))
    t = st.trend_test(batches, noisy)
    # independent reference: polyfit slope, its standard error from the residuals, t quantile
    slope, intercept = np.polyfit(x, noisy, 1)
    resid = noisy - (slope * x + intercept)
    se = math.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) ** 2).sum())
    q = sps.t.ppf(0.975, len(x) - 2)
    assert t.slope_per_doubling == pytest.approx(slope)
    assert (t.slope_low, t.slope_high) == pytest.approx((slope - q * se, slope + q * se))
    ranks = sps.rankdata(noisy), sps.rankdata(x)
    assert t.spearman_rho == pytest.approx(np.corrcoef(*ranks)[0, 1])
    with pytest.raises(ValueError, match="at least 3 points"):
        st.trend_test([8, 16], [1.0, 2.0])


def test_noise_floor():
    nf = st.noise_floor([10.0, 11.0, 12.0])
    assert (nf.n, nf.mean, nf.std) == (3, 11.0, pytest.approx(1.0))
    assert nf.cv == pytest.approx(1 / 11)
    with pytest.raises(ValueError, match="at least 2"):
        st.noise_floor([1.0])


@pytest.mark.parametrize("low, high, higher_is_better, outcome", [
    (1.2, 1.8, True, st.REPRODUCED), (0.5, 0.9, True, st.OPPOSITE),
    (0.9, 1.3, True, st.INCONCLUSIVE), (0.6, 0.8, False, st.REPRODUCED),
    (1.1, 1.4, False, st.OPPOSITE), (0.8, 1.1, False, st.INCONCLUSIVE),
    (math.nan, math.nan, True, st.INCONCLUSIVE),
])
def test_verdicts_follow_the_printed_rule(low, high, higher_is_better, outcome):
    interval = st.RatioInterval(1.0, low, high, 3, 3, st.PAIRED)
    v = st.verdict("IS", interval, higher_is_better, paper_change=50)
    assert v.outcome == outcome
    assert v.text.startswith(f"IS (batch 64 -> 512): {outcome}.")
    assert "paper: +50%" in v.text and "Rule: reproduced if the 95% interval" in v.text


def test_few_seeds_get_an_honest_interval():
    """Two paired seeds: the percentile bootstrap has 3 distinct resamples and would span only
    the two observed ratios; the t-interval on log ratios (1 degree of freedom) is far wider."""
    a, b = [2.4, 2.8], [2.6, 3.0]  # ratios 1.083 and 1.071
    ci = st.ratio_interval(a, b)
    t_low, t_high = st.log_ratio_t_interval(a, b, paired=True)
    d = np.log(b) - np.log(a)
    q = sps.t.ppf(0.975, 1)
    half = q * d.std(ddof=1) / math.sqrt(2)
    assert (t_low, t_high) == pytest.approx((math.exp(d.mean() - half), math.exp(d.mean() + half)))
    assert (ci.low, ci.high) == pytest.approx((min(t_low, ci.low), max(t_high, ci.high)))
    assert ci.low <= t_low < 1.071 and ci.high >= t_high > 1.083
    # Welch on logs for unpaired groups, against a hand computation
    la, lb = np.log([4.0, 4.4, 3.9]), np.log([6.0, 6.5, 5.7, 6.1])
    va, vb = la.var(ddof=1) / 3, lb.var(ddof=1) / 4
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 3)
    half = sps.t.ppf(0.975, df) * math.sqrt(va + vb)
    centre = lb.mean() - la.mean()
    assert st.log_ratio_t_interval(np.exp(la), np.exp(lb), paired=False) == pytest.approx(
        (math.exp(centre - half), math.exp(centre + half)))


def test_spearman_p_value_is_exact_for_few_points():
    """rho = 1 over 5 distinct batch sizes: 2 of the 120 orderings are as extreme."""
    t = st.trend_test([8, 16, 32, 64, 128], [1.0, 2.0, 3.0, 4.0, 5.0])
    assert t.spearman_rho == pytest.approx(1.0)
    assert t.spearman_p == pytest.approx(2 / 120)
