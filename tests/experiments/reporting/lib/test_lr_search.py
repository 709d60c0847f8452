"""Study v5's lr search with known answers: a planted grid's best factors, B_crit and lr
exponent are recovered; a best factor at the grid's edge is not bracketed; a run that never
reaches the target is censored; the held-out seed's estimate checked by hand."""
import math

import numpy as np
import pytest

from experiments.reporting.lib import lr_search
from experiments.reporting.lib.crossings import Curve

TARGET = 7.0
BATCHES = (16, 32, 64, 128, 256, 512)
FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def curve(batch, seed, steps_to_target, cap=100_000, every=100):
    """IS rising linearly through TARGET at `steps_to_target` (interpolation is exact);
    a curve whose target lies past `cap` never reaches it."""
    steps = tuple(range(every, cap + 1, every))
    scores = tuple(TARGET * s / steps_to_target for s in steps)
    return Curve(batch, seed, 2, steps, {"is_mean": scores}, {})


def run(batch, factor, seed, steps, cap=100_000):
    return lr_search.SearchRun(batch, factor, seed, curve(batch, seed, steps, cap), cap)


def planted(s_min=1000.0, b_crit=200.0, a=0.5, width=1.0, noise=0.02, seeds=(0, 1, 2)):
    """Steps = S_min (1 + B_crit / B) at the best factor 1.2 (B / 64)^a, more away from it
    (the 1.2 keeps every best factor off the midpoint of two grid factors)."""
    rng = np.random.default_rng(0)
    runs = []
    for b in BATCHES:
        best = 1.2 * (b / 64) ** a
        for f in FACTORS:
            for s in seeds:
                penalty = math.exp(width * math.log(f / best) ** 2)
                steps = s_min * (1 + b_crit / b) * penalty * math.exp(rng.normal(0, noise))
                runs.append(run(b, f, s, steps))
    return runs


def test_a_planted_grid_gives_back_its_best_factors_b_crit_and_lr_exponent():
    runs = planted()
    choices = lr_search.choose(runs, "is_mean", TARGET)
    # the grid factor nearest 1.2 (B / 64)^0.5 on the log scale
    want = {b: min(FACTORS, key=lambda f: abs(math.log(f / 1.2) - 0.5 * math.log(b / 64)))
            for b in BATCHES}
    assert list(want.values()) == [0.5, 1.0, 1.0, 2.0, 2.0, 4.0]
    assert {b: c.factor for b, c in choices.items()} == want
    assert all(c.bracket == lr_search.BRACKETED for c in choices.values())
    fit = lr_search.tuned_fit(runs, choices, "is_mean", TARGET, n_dis=2, bootstrap=200)
    # grid factors miss the best by up to sqrt 2: a penalty of exp(log(sqrt 2)^2) = 1.13 at
    # most, which bends the curve a little; B_crit 200 comes back within 15%
    assert fit.fit.b_crit == pytest.approx(200, rel=0.15)
    assert fit.b_crit_ci[0] < fit.fit.b_crit < fit.b_crit_ci[1]
    rule = lr_search.lr_rule(runs, choices, "is_mean", TARGET, bootstrap=200)
    assert rule.exponent == pytest.approx(0.5, abs=0.1)
    assert rule.rules["square root"] == "inside" and rule.rules["none"] == "outside"
    assert rule.peak_batch == 512 and not rule.falls_after_peak


def test_a_best_factor_at_the_grid_edge_is_not_bracketed():
    runs = [r for r in planted() if r.factor <= 2.0]  # batch 256, 512 want 2, 2.8
    choices = lr_search.choose(runs, "is_mean", TARGET)
    assert choices[512].factor == 2.0 and choices[512].bracket == lr_search.AT_HIGHEST
    assert choices[16].bracket == lr_search.BRACKETED  # wants 0.5
    low = [r for r in planted() if r.factor >= 1.0]
    assert lr_search.choose(low, "is_mean", TARGET)[16].bracket == lr_search.AT_LOWEST
    # 1 and 4 only around a best of 2 at batch 256: neighbours 2x... then 4x apart
    sparse = [r for r in planted() if r.factor in (0.25, 1.0, 4.0, 16.0)]
    assert lr_search.choose(sparse, "is_mean", TARGET)[64].bracket == lr_search.WIDE_GAP


def test_a_run_that_never_reaches_the_target_is_censored_and_ranks_last():
    runs = [run(64, 1.0, 0, 900), run(64, 1.0, 1, 1100),
            # fewer steps on seed 0, but seed 1 never gets there (target past the cap)
            run(64, 2.0, 0, 500, cap=3000), run(64, 2.0, 1, 50_000, cap=3000),
            run(64, 4.0, 0, 80_000, cap=3000), run(64, 4.0, 1, 90_000, cap=3000)]
    [c] = lr_search.choose(runs, "is_mean", TARGET).values()
    assert c.factor == 1.0 and not c.censored
    assert c.cell_steps == (pytest.approx(math.sqrt(900 * 1100)), None, None)
    only_bad = [r for r in runs if r.factor == 4.0]
    [c] = lr_search.choose(only_bad, "is_mean", TARGET).values()
    assert c.censored and c.steps_all == pytest.approx(3000)  # counted at its cap
    found = lr_search.found_at(only_bad, {64: c}, "is_mean", TARGET)
    assert [x.censored for x in found[64]] == [True, True]


def test_the_held_out_seed_and_the_selection_bias_by_hand():
    """Batch 64: factor 1 takes 1000 and 1200 steps on seeds 0-1, factor 2 takes 800 and
    1000: factor 2 is chosen (geometric mean sqrt(800*1000) = 894.4 < 1095.4). Its held-out
    seed 2 takes 1100, so the bias is 1100 / 894.4 = 1.23 and all three seeds give
    (800*1000*1100)^(1/3) = 958.3. Batch 512: factor 4 (300, 330; held out 310) vs 8 (400)."""
    runs = [run(64, 1.0, 0, 1000), run(64, 1.0, 1, 1200),
            run(64, 2.0, 0, 800), run(64, 2.0, 1, 1000), run(64, 2.0, 2, 1100),
            run(512, 4.0, 0, 300), run(512, 4.0, 1, 330), run(512, 4.0, 2, 310),
            run(512, 8.0, 0, 400), run(512, 8.0, 1, 420)]
    choices = lr_search.choose(runs, "is_mean", TARGET)
    c = choices[64]
    assert c.factor == 2.0 and c.seeds == (0, 1, 2)
    assert c.steps_selection == pytest.approx(894.427, rel=1e-4)
    assert c.steps_held_out == pytest.approx(1100)
    assert c.selection_bias == pytest.approx(1.2298, rel=1e-3)
    assert c.steps_all == pytest.approx(958.33, rel=1e-4)
    up = lr_search.speedup(runs, choices, "is_mean", TARGET, 64, 512, bootstrap=200)
    want = 958.33 / (300 * 330 * 310) ** (1 / 3)
    assert up.steps_saved == pytest.approx(want, rel=1e-4)
    assert up.images_spent == pytest.approx(8 / want, rel=1e-4)
    assert (up.baseline_factor, up.factor) == (2.0, 4.0)
    assert up.welch_ci[0] < up.steps_saved < up.welch_ci[1]
    assert up.bootstrap_ci[0] <= up.steps_saved <= up.bootstrap_ci[1]


def test_excess_batch_is_where_steps_pass_perfect_scaling_by_a_fifth():
    """S = 1000 (1 + 100 / B) from batch 16: S B / (S_16 16) = (B + 100) / 116 reaches 1.2 at
    B = 39.2, log-interpolated between 32 (1.138) and 64 (1.414)."""
    runs = [run(b, 1.0, s, 1000 * (1 + 100 / b)) for b in (16, 32, 64, 128) for s in (0, 1)]
    choices = lr_search.choose(runs, "is_mean", TARGET)
    r32, r64 = 132 / 116, 164 / 116
    t = math.log(1.2 / r32) / math.log(r64 / r32)
    assert lr_search.excess_batch(choices) == pytest.approx(32 * 2 ** t, rel=1e-6)
    flat = [run(b, 1.0, s, 1000 * 16 / b) for b in (16, 32, 64) for s in (0, 1)]
    assert lr_search.excess_batch(lr_search.choose(flat, "is_mean", TARGET)) is None


def test_lack_of_fit_rejects_a_curve_the_hyperbola_cannot_follow():
    rng = np.random.default_rng(1)
    good = [run(b, 1.0, s, 1000 * (1 + 100 / b) * math.exp(rng.normal(0, 0.03)))
            for b in BATCHES for s in range(3)]
    # steps that fall, then rise again at large batch: no hyperbola fits
    bent = [run(b, 1.0, s, 1000 * (1 + 100 / b) * (1 + (b == 512) * 1.0 + (b == 256) * 0.5)
                * math.exp(rng.normal(0, 0.03))) for b in BATCHES for s in range(3)]
    for runs, ok in ((good, True), (bent, False)):
        choices = lr_search.choose(runs, "is_mean", TARGET)
        f = lr_search.tuned_fit(runs, choices, "is_mean", TARGET, 2, bootstrap=0)
        assert (f.lack_of_fit_p > 0.05) == ok


def test_a_best_lr_that_rises_then_falls_is_reported_as_such():
    """Best factor 1.2 (B / 64)^0.5 up to batch 128, then halving per doubling (the surge
    Li et al. describe): the peak is at 128 and the rule says it falls after."""
    rng = np.random.default_rng(2)
    runs = []
    for b in BATCHES:
        best = 1.2 * (min(b, 128) / 64) ** 0.5 * (128 / max(b, 128))
        for f in FACTORS:
            for s in (0, 1):
                steps = 1000 * (1 + 100 / b) * math.exp(math.log(f / best) ** 2
                                                        + rng.normal(0, 0.02))
                runs.append(run(b, f, s, steps))
    choices = lr_search.choose(runs, "is_mean", TARGET)
    rule = lr_search.lr_rule(runs, choices, "is_mean", TARGET, bootstrap=0)
    assert rule.peak_batch == 128 and rule.falls_after_peak


def test_the_next_factor_brackets_what_is_not():
    edge = [r for r in planted() if r.factor <= 2.0]
    choices = lr_search.choose(edge, "is_mean", TARGET)
    assert choices[512].next_factor == 4.0  # best at the highest: twice it
    assert choices[16].next_factor is None  # bracketed
    low = lr_search.choose([r for r in planted() if r.factor >= 1.0], "is_mean", TARGET)
    assert low[16].next_factor == 0.5
    # batch 512 searched at 1 and 2.83 (the probe) and 8: the gap below 2.83 gets factor 2
    probe = [run(512, f, s, 1000 * math.exp(math.log(f / 2.5) ** 2))
             for f in (1.0, 2.828427, 8.0) for s in (0, 1)]
    [c] = lr_search.choose(probe, "is_mean", TARGET).values()
    assert c.factor == 2.828427 and c.bracket == lr_search.WIDE_GAP
    assert c.next_factor == 4.0  # the wider side: 2.83 -> 8 (2.83x) vs 1 (2.83x)
