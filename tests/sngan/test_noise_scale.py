"""The noise-scale estimator against a problem whose gradient noise is known in closed form.

Linear regression y = x.w* + e, x ~ N(0, I_d), e ~ N(0, s^2), per-example loss (x.w - y)^2 / 2
at w = w* + delta: the per-example gradient is x (x.delta - e), so G = delta and (Isserlis)
Sigma = (|delta|^2 + s^2) I + delta delta^T, tr(Sigma) = d (|delta|^2 + s^2) + |delta|^2.
"""
import math

import numpy as np
import pytest

from sngan import noise_scale

D, NOISE = 10, 1.0
DELTA = np.full(D, 1.0 / math.sqrt(D))  # |delta| = 1
TRUE_G2 = 1.0
TRUE_TRACE = D * (1.0 + NOISE ** 2) + 1.0  # 21
B_SMALL, B_BIG = 8, 64


def regression_norms(rng, measurements: int):
    """(mean |G_small|^2 over the big batch's 8 slices, |G_big|^2) per measurement."""
    x = rng.standard_normal((measurements, B_BIG, D))
    e = NOISE * rng.standard_normal((measurements, B_BIG))
    per_example = x * (x @ DELTA - e)[..., None]  # [M, B, D]
    small = per_example.reshape(measurements, B_BIG // B_SMALL, B_SMALL, D).mean(axis=2)
    big = per_example.mean(axis=1)
    return (small ** 2).sum(-1).mean(-1), (big ** 2).sum(-1)


def test_recovers_the_closed_form_trace_and_squared_gradient():
    """Tolerance: 3% on tr(Sigma) and 5% on |G|^2 from 4,000 measurements (their standard errors
    are about 0.4% and 0.7% here; seeds 0-5 all fall within 1.6%)."""
    small, big = regression_norms(np.random.default_rng(0), 4000)
    terms = np.array([noise_scale.unbiased_terms(s, b, B_SMALL, B_BIG)
                      for s, b in zip(small, big)])
    g2, trace = terms.mean(axis=0)
    assert trace == pytest.approx(TRUE_TRACE, rel=0.03)
    assert g2 == pytest.approx(TRUE_G2, rel=0.05)
    # the naive readings are biased: the small batch's norm holds tr(Sigma)/B_small of noise
    assert small.mean() == pytest.approx(TRUE_G2 + TRUE_TRACE / B_SMALL, rel=0.03)


def test_unbiased_terms_by_hand():
    # |G|^2 = (64 * 2 - 8 * 4) / 56 = 96/56; tr = (4 - 2) / (1/8 - 1/64) = 2 * 64 / 7
    g2, trace = noise_scale.unbiased_terms(4.0, 2.0, 8, 64)
    assert g2 == pytest.approx(96 / 56)
    assert trace == pytest.approx(128 / 7)
    with pytest.raises(ValueError, match="b_small < b_big"):
        noise_scale.unbiased_terms(4.0, 2.0, 64, 64)


def test_tracker_smooths_both_terms_before_the_ratio():
    small, big = regression_norms(np.random.default_rng(1), 400)
    tracker = noise_scale.NoiseScaleTracker(every=5, batches={"d": (B_SMALL, B_BIG)},
                                            source="test", ema_decay=0.9)
    assert tracker.current() == {"d": None}
    for i, (s, b) in enumerate(zip(small, big)):
        tracker.observe(5 * (i + 1), "d", s, b)
    series = tracker.series["d"]
    # the EMA recomputed by hand: zero-started, the same factor in both terms
    g2_ema = tr_ema = 0.0
    for g2, tr in zip(series.g2, series.trace):
        g2_ema, tr_ema = 0.9 * g2_ema + 0.1 * g2, 0.9 * tr_ema + 0.1 * tr
    assert series.b_simple[-1] == pytest.approx(tr_ema / g2_ema)
    assert tracker.current()["d"] == series.b_simple[-1]
    # single measurements are noisy (some ratios are negative or huge); the smoothed one is not
    raw = np.array(series.trace) / np.array(series.g2)
    assert raw.min() < 0 or raw.max() > 3 * TRUE_TRACE
    smoothed = np.array(series.b_simple[50:])
    assert np.all((smoothed > 0.4 * TRUE_TRACE) & (smoothed < 2.5 * TRUE_TRACE))
    assert [tracker.due(s) for s in (4, 5, 10, 11)] == [False, True, True, False]


def test_window_summary_covers_the_truth_and_states_its_spread():
    small, big = regression_norms(np.random.default_rng(2), 200)
    tracker = noise_scale.NoiseScaleTracker(1, {"d": (B_SMALL, B_BIG)}, "test")
    for i, (s, b) in enumerate(zip(small, big)):
        tracker.observe(i + 1, "d", s, b)
    summary = tracker.summary()
    d = summary["d"]
    assert d["measurements"] == 100 and d["window_start"] == 101
    window = slice(100, None)
    expected = np.mean(tracker.series["d"].trace[window]) / np.mean(tracker.series["d"].g2[window])
    assert d["b_simple"] == pytest.approx(expected)
    assert d["ci_low"] < TRUE_TRACE / TRUE_G2 < d["ci_high"]
    assert d["ci_low"] < d["b_simple"] < d["ci_high"]
    assert d["ema_std"] > 0
    assert summary["estimator"].startswith("B_simple") and "1812.06162" in summary["estimator"]
    assert summary["every"] == 1 and summary["batches"] == {"d": [B_SMALL, B_BIG]}


def test_an_unmeasured_run_has_no_summary_and_a_noise_swamped_window_no_upper_bound():
    tracker = noise_scale.NoiseScaleTracker(10, {"d": (4, 8), "g": (4, 8)}, "test")
    assert tracker.summary() is None
    # |G|^2 estimates around zero: the ratio of means is undefined or huge
    for i, g2 in enumerate([0.5, -0.5, 0.4, -0.6]):
        tracker._observe_terms("d", i + 1, g2, 1.0)
        tracker._observe_terms("g", i + 1, 1.0, 1.0)
    d = noise_scale.window_summary(tracker.series["d"], fraction=1.0)
    assert d["b_simple"] is None  # mean |G|^2 = -0.05
    assert d["ci_high"] is None
    assert noise_scale.ratio(1.0, 0.0) is None


def test_replay_restores_a_resumed_runs_series_up_to_its_checkpoint():
    small, big = regression_norms(np.random.default_rng(3), 6)
    full = noise_scale.NoiseScaleTracker(2, {"d": (B_SMALL, B_BIG)}, "test")
    for i, (s, b) in enumerate(zip(small, big)):
        full.observe(2 * (i + 1), "d", s, b)
    resumed = noise_scale.NoiseScaleTracker(2, {"d": (B_SMALL, B_BIG)}, "test")
    resumed.replay(full.to_dict(), until_step=8)
    assert resumed.series["d"].steps == [2, 4, 6, 8]
    assert resumed.series["d"].b_simple == full.series["d"].b_simple[:4]


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError, match="every"):
        noise_scale.NoiseScaleTracker(0, {"d": (4, 8)}, "test")
    with pytest.raises(ValueError, match="b_small < b_big"):
        noise_scale.NoiseScaleTracker(1, {"d": (8, 8)}, "test")


def test_predicted_critical_batch_is_the_nearest_power_of_two_in_log2():
    assert noise_scale.predicted_critical_batch(21.0) == 16  # log2 21 = 4.39
    assert noise_scale.predicted_critical_batch(23.0) == 32  # log2 23 = 4.52
    assert noise_scale.predicted_critical_batch(0.3) == 1
    assert noise_scale.predicted_critical_batch(None) is None
    assert noise_scale.predicted_critical_batch(-5.0) is None
