"""Time to target and McCandlish's critical batch, on curves whose answers are known."""
import math

import numpy as np
import pytest

from experiments.reporting.lib import mccandlish as fit_lib
from experiments.reporting.lib.crossings import (
    Crossing,
    Curve,
    crossings,
    first_crossing,
    target_grid,
)

BATCHES = (16, 32, 64, 128, 256, 512)
S_MIN, B_CRIT = 400.0, 120.0


def test_first_crossing_interpolates_between_the_evaluations_around_it():
    # 2.8 at step 200, 3.4 at 300: IS 3.0 is a third of the way, step 233.33
    c = first_crossing([100, 200, 300], [2.0, 2.8, 3.4], 3.0)
    assert c.step == pytest.approx(200 + 100 / 3) and c.reached and not c.before_first
    assert first_crossing([100, 200], [2.0, 3.0], 3.0).step == 200.0  # reached exactly
    # a dip after the crossing does not move it: the first crossing counts
    assert first_crossing([100, 200, 300, 400], [2.5, 3.5, 2.0, 4.0], 3.0).step == 150.0


def test_a_target_never_reached_is_censored_at_the_last_step():
    c = first_crossing([100, 200, 300], [2.0, 2.5, 2.9], 3.0)
    assert (c.step, c.censored, c.reached) == (300.0, True, False)


def test_a_target_met_at_the_first_evaluation_is_marked_and_nan_counts_as_below():
    assert first_crossing([100, 200], [3.2, 3.5], 3.0) == Crossing(100.0, before_first=True)
    # a diverged evaluation (nan) is below any target; the next one crosses without interpolation
    assert first_crossing([100, 200, 300], [2.0, float("nan"), 3.1], 3.0) == Crossing(300.0)
    with pytest.raises(ValueError):
        first_crossing([200, 100], [1.0, 2.0], 1.5)


def _curve(batch, seed, s_target3, top):
    """IS rising linearly from 2 at step 0 to `top`, passing 3 at `s_target3`."""
    steps = tuple(range(100, 3001, 100))
    slope = 1.0 / s_target3
    values = tuple(min(2 + slope * s, top) for s in steps)
    return Curve(batch, seed, 2, steps, {"is_mean": values, "accuracy": values},
                 {"d": (None,) * len(steps), "g": (None,) * len(steps)})


def test_the_target_grid_stops_where_fewer_than_three_batch_sizes_reach():
    curves = [_curve(b, 0, 500, top) for b, top in
              zip(BATCHES, (3.2, 3.6, 4.1, 4.6, 4.6, 5.2))]
    # 4.0 is reached by 64, 128, 256 and 512; 4.5 by 128, 256, 512; 5.0 by 512 alone
    assert target_grid(curves, "is_mean") == [3.0, 3.5, 4.0, 4.5]
    found = crossings(curves, "is_mean", 3.5)
    assert found[16] == [Crossing(3000.0, censored=True)]
    assert found[32][0].step == pytest.approx(750.0)


def _exact(batch):
    return S_MIN * (1 + B_CRIT / batch)


def test_the_fit_recovers_known_s_min_and_b_crit():
    found = {b: [Crossing(_exact(b))] * 3 for b in BATCHES}
    f = fit_lib.fit(found, n_dis=2, bootstrap=0)
    assert f.s_min == pytest.approx(S_MIN, rel=1e-3)
    assert f.b_crit == pytest.approx(B_CRIT, rel=1e-3)
    assert f.e_min == pytest.approx(2 * S_MIN * B_CRIT, rel=2e-3)  # images seen by D
    assert max(abs(r) for r in f.residuals) < 1e-3 and f.at_bound == ""
    # the hyperbola: (S / S_min - 1)(E / E_min - 1) = 1 at every batch
    for b in BATCHES:
        assert (f.steps(b) / f.s_min - 1) * (f.images(b) / f.e_min - 1) == pytest.approx(1,
                                                                                        rel=1e-3)


def test_noisy_seeds_recover_the_truth_within_their_interval_and_a_stated_tolerance():
    rng = np.random.default_rng(3)
    found = {b: [Crossing(_exact(b) * math.exp(rng.normal(0, 0.05))) for _ in range(3)]
             for b in BATCHES}
    f = fit_lib.fit(found, n_dis=2, bootstrap=1000)
    assert f.b_crit == pytest.approx(B_CRIT, rel=0.3)
    assert f.s_min == pytest.approx(S_MIN, rel=0.1)
    assert f.b_crit_ci[0] < B_CRIT < f.b_crit_ci[1]
    assert f.s_min_ci[0] < S_MIN < f.s_min_ci[1]


def test_censored_batches_bound_the_fit_and_are_never_dropped():
    found = {b: [Crossing(_exact(b))] * 3 for b in BATCHES}
    # batch 16 stopped (censored) before its crossing: a lower bound the fit already honours
    early = {**found, 16: [Crossing(_exact(16) * 0.5, censored=True)] * 3}
    f = fit_lib.fit(early, n_dis=2, bootstrap=0)
    assert f.censored == (True, False, False, False, False, False)
    assert f.b_crit == pytest.approx(B_CRIT, rel=1e-3)
    # a bound above the fitted curve pulls the fit up to it
    late = {**found, 16: [Crossing(_exact(16) * 2.0, censored=True)] * 3}
    g = fit_lib.fit(late, n_dis=2, bootstrap=0)
    assert g.b_crit > B_CRIT and g.steps(16) > _exact(16) * 1.2
    # two batch sizes that reach cannot fit two parameters
    two = {b: ([Crossing(_exact(b))] if b >= 256 else [Crossing(1.0, censored=True)])
           for b in BATCHES}
    assert fit_lib.fit(two, n_dis=2) is None


def test_perfect_scaling_over_the_whole_range_is_flagged_not_extrapolated():
    found = {b: [Crossing(64_000 / b)] * 2 for b in BATCHES}  # S ~ 1/B: B_crit >> 512
    assert fit_lib.fit(found, n_dis=2, bootstrap=0).at_bound == "upper"
    flat = {b: [Crossing(500.0)] * 2 for b in BATCHES}  # S does not fall: B_crit ~ 0
    assert fit_lib.fit(flat, n_dis=2, bootstrap=0).at_bound == "lower"


def test_the_bootstrap_interval_covers_the_truth_at_about_its_nominal_rate():
    # the design of the study: 6 batch sizes x 3 seeds, seeds' steps spread 15% (lognormal)
    rng = np.random.default_rng(0)
    hits_b = hits_s = 0
    trials = 100
    for k in range(trials):
        found = {b: [Crossing(_exact(b) * math.exp(rng.normal(0, 0.15))) for _ in range(3)]
                 for b in BATCHES}
        f = fit_lib.fit(found, n_dis=2, bootstrap=400, seed=k)
        hits_b += f.b_crit_ci[0] <= B_CRIT <= f.b_crit_ci[1]
        hits_s += f.s_min_ci[0] <= S_MIN <= f.s_min_ci[1]
    # nominal 95%; measured over 400 trials: 91.5% (B_crit) and 89% (S_min) with 3 seeds
    assert 0.84 <= hits_b / trials <= 0.99
    assert 0.82 <= hits_s / trials <= 0.99


def test_steps_saved_and_images_spent():
    found = {b: [Crossing(_exact(b))] * 3 for b in BATCHES}
    s = fit_lib.speedup(found, 64, 512, bootstrap=200)
    assert s.steps_saved == pytest.approx(_exact(64) / _exact(512))
    assert s.images_spent == pytest.approx(8 / s.steps_saved)
    assert s.ci == pytest.approx((s.steps_saved, s.steps_saved))  # no seed spread
    perfect = {64: [Crossing(800.0)], 512: [Crossing(100.0)]}
    assert fit_lib.speedup(perfect, 64, 512, bootstrap=0).steps_saved == pytest.approx(8.0)
    # batch 64 never got there within its steps: the saving is at least the ratio
    censored = {64: [Crossing(800.0, censored=True)], 512: [Crossing(100.0)]}
    assert fit_lib.speedup(censored, 64, 512).bound == ">"
