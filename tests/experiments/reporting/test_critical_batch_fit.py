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


@pytest.mark.parametrize("steps,values,want", [
    ([100, 200, 300], [2.0, 2.8, 3.4], Crossing(200 + 100 / 3)),  # a third of the way
    ([100, 200], [2.0, 3.0], Crossing(200.0)),  # reached exactly
    ([100, 200, 300, 400], [2.5, 3.5, 2.0, 4.0], Crossing(150.0)),  # a later dip: the first
    ([100, 200, 300], [2.0, 2.5, 2.9], Crossing(300.0, censored=True)),  # never: last step
    ([100, 200], [3.2, 3.5], Crossing(100.0, before_first=True)),  # at or before the first
    ([100, 200, 300], [2.0, math.nan, 3.1], Crossing(300.0)),  # nan is below; not interpolated
])
def test_first_crossing_of_target_3(steps, values, want):
    c = first_crossing(steps, values, 3.0)
    assert (c.step, c.censored, c.before_first) == (pytest.approx(want.step), want.censored,
                                                    want.before_first)


def test_a_curve_needs_increasing_steps():
    for steps in ([200, 100], []):
        with pytest.raises(ValueError):
            first_crossing(steps, [1.0, 2.0][:len(steps)], 1.5)


def test_the_target_grid_stops_where_fewer_than_three_batch_sizes_reach():
    steps = tuple(range(100, 3001, 100))  # IS rising from 2 by 1 per 500 steps, up to `top`
    curves = [Curve(b, 0, 2, steps, {"is_mean": tuple(min(2 + s / 500, top) for s in steps)}, {})
              for b, top in zip(BATCHES, (3.2, 3.6, 4.1, 4.6, 4.6, 5.2))]
    # 4.0 is reached by 64, 128, 256 and 512; 4.5 by 128, 256, 512; 5.0 by 512 alone
    assert target_grid(curves, "is_mean") == [3.0, 3.5, 4.0, 4.5]
    found = crossings(curves, "is_mean", 3.5)
    assert found[16] == [Crossing(3000.0, censored=True)]
    assert found[32][0].step == pytest.approx(750.0)


def _exact(batch):
    return S_MIN * (1 + B_CRIT / batch)


def test_the_fit_recovers_known_s_min_and_b_crit():
    f = fit_lib.fit({b: [Crossing(_exact(b))] * 3 for b in BATCHES}, n_dis=2, bootstrap=0)
    assert (f.s_min, f.b_crit) == (pytest.approx(S_MIN, rel=1e-3), pytest.approx(B_CRIT, rel=1e-3))
    assert f.e_min == pytest.approx(2 * S_MIN * B_CRIT, rel=2e-3)  # images seen by D
    assert max(abs(r) for r in f.residuals) < 1e-3 and f.at_bound == ""
    # the hyperbola: (S / S_min - 1)(E / E_min - 1) = 1 at every batch, E = n_dis B S
    for b in BATCHES:
        e = 2 * b * f.steps(b)
        assert (f.steps(b) / f.s_min - 1) * (e / f.e_min - 1) == pytest.approx(1, rel=1e-3)


def test_noisy_seeds_recover_the_truth_within_their_interval_and_a_stated_tolerance():
    rng = np.random.default_rng(3)
    found = {b: [Crossing(_exact(b) * math.exp(rng.normal(0, 0.05))) for _ in range(3)]
             for b in BATCHES}
    f = fit_lib.fit(found, n_dis=2, bootstrap=1000)
    assert (f.b_crit, f.s_min) == (pytest.approx(B_CRIT, rel=0.3), pytest.approx(S_MIN, rel=0.1))
    assert f.b_crit_ci[0] < B_CRIT < f.b_crit_ci[1] and f.s_min_ci[0] < S_MIN < f.s_min_ci[1]


def test_censored_batches_bound_the_fit_and_are_never_dropped():
    found = {b: [Crossing(_exact(b))] * 3 for b in BATCHES}
    # batch 16 stopped (censored) before its crossing: a lower bound the fit already honours
    early = fit_lib.fit({**found, 16: [Crossing(_exact(16) * 0.5, censored=True)] * 3}, 2, 0)
    assert early.censored == (True, False, False, False, False, False)
    assert early.b_crit == pytest.approx(B_CRIT, rel=1e-3)
    # a bound above the fitted curve pulls the fit up to it
    late = fit_lib.fit({**found, 16: [Crossing(_exact(16) * 2.0, censored=True)] * 3}, 2, 0)
    assert late.b_crit > B_CRIT and late.steps(16) > _exact(16) * 1.2
    # two batch sizes that reach cannot fit two parameters
    two = {b: [Crossing(_exact(b), censored=b < 256)] for b in BATCHES}
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
    # a censored side makes the saving a bound (no interval); both sides: unknown
    early = Crossing(800.0, censored=True)
    assert [fit_lib.speedup(f, 64, 512).bound for f in (
        {64: [early], 512: [Crossing(100.0)]}, {64: [Crossing(800.0)], 512: [early]},
        {64: [early], 512: [early]})] == [">", "<", "?"]
