"""The study's answer from in-memory points: comparisons, verdicts, noise and plateaus."""
import math

import numpy as np
import pytest
from fake_results import make_point, study_of

from experiments.reporting.lib import stats as st
from experiments.reporting.sections import verdicts as sv

BATCHES = (8, 16, 32, 64, 128, 256, 512)
D = st.Direction


def sweep(seeds=3, gain=0.5, spread=0.1):
    """IS rising by `gain` per doubling, seed k offset by `spread` * (k - 1)."""
    return [make_point(b, s, 3.0 + gain * i + spread * (s - 1), 1000.0 / (1 + 0.2 * i) + 10 * s,
                       accuracy=0.1 + 0.08 * i + 0.01 * s, replicates=(3.0 + gain * i + 0.01,))
            for s in range(seeds) for i, b in enumerate(BATCHES)]


def controls(seeds=3, steps=800):
    return [make_point(64, s, 5.0 + 0.1 * s, 700.0, accuracy=0.6, steps=steps,
                       budget="equal_images") for s in range(seeds)]


def analyse(points, baseline=64, target=512):
    return sv.signal_and_noise(points, baseline, target)


def test_equal_steps_comparison_and_verdicts():
    result = analyse(sweep())
    assert (result.baseline_batch, result.target_batch) == (64, 512)
    [c] = result.comparisons
    assert c.name == "equal_steps" and c.baseline.seeds == [0, 1, 2]
    v = {x.metric: x for x in c.verdicts}
    assert v["is"].primary and v["is"].direction == D.REPRODUCED
    assert v["is"].size == "smaller than the paper's +50%"  # 4.5 -> 6.0: +33%, tight
    assert c.metrics["is"].interval.ratio == pytest.approx(
        np.exp(np.mean(np.log([6.0 - 0.1 + 0.1 * s for s in range(3)]))
               - np.mean(np.log([4.5 - 0.1 + 0.1 * s for s in range(3)]))))
    assert not v["fid"].primary and v["fid"].size is None and v["fid"].rule == st.Rule.HOLM
    p = {m: c.metrics[m].interval.p_value for m in ("fid", "acc")}
    assert {m: c.metrics[m].holm_p for m in p} == pytest.approx(st.holm(p))
    assert c.metrics["is"].exact.p_value is None  # 3 vs 3: not run
    assert c.metrics["is"].exact.smallest_p == pytest.approx(0.1)
    assert c.metrics["is"].paired.method == st.PAIRED
    assert result.equal_images_note == sv.NO_CONTROLS.format(baseline=64)


def test_six_seeds_run_the_exact_test():
    exact = analyse(sweep(seeds=6)).comparisons[0].metrics["is"].exact
    assert (exact.n_a, exact.n_b) == (6, 6)
    assert exact.p_value == pytest.approx(2 / 924)  # complete separation


def test_the_verdict_takes_the_target_batch_it_finds():
    result = analyse([p for p in sweep() if p.record.global_batch_size <= 256])
    assert result.target_batch == 256 and result.comparisons[0].target.batch == 256
    assert analyse(sweep(), 32, 128).comparisons[0].verdicts[0].direction == D.REPRODUCED


def test_equal_images_comparison_pairs_controls_with_the_same_images():
    result = analyse(sweep() + controls())
    steps, images = result.comparisons
    assert images.label == "equal images" and result.equal_images_note is None
    assert (images.baseline.steps, images.target.steps) == (800, 100)
    assert images.baseline.images_seen == images.target.images_seen
    assert images.baseline.scores["is"].mean == pytest.approx(5.1)
    # controls stay out of the batch-64 arm of the equal-steps comparison and of the trend
    assert steps.baseline.scores["is"].mean == pytest.approx(4.5)
    assert result.trends["is"].n == 21
    assert images.verdicts[0].size is None  # the paper's +50% is at equal steps
    # controls with no batch-512 point at their images: said, not failed
    odd = analyse(sweep() + controls(seeds=2, steps=700))
    assert odd.equal_images_note == sv.NO_MATCH.format(target=512, images=89_600)


def test_the_exact_test_runs_whenever_its_floor_is_below_p_05():
    # 3 controls vs 6 seeds at 512: the floor is 2/C(9,3) = 0.024 < 0.05, so it runs
    exact = analyse(sweep(seeds=6) + controls()).comparisons[1].metrics["is"].exact
    assert (exact.n_a, exact.n_b) == (3, 6)
    assert exact.smallest_p == exact.p_value == pytest.approx(2 / 84)  # complete separation


def test_seed_spread_is_the_floor_and_evaluation_noise_a_separate_one():
    result = analyse(sweep(spread=0.3))
    s = result.seed_spread["is"]
    cvs = [np.std([3.0 + 0.5 * i + 0.3 * (k - 1) for k in range(3)], ddof=1)
           / (3.0 + 0.5 * i) for i in range(7)]
    assert s.batch_sizes == 7 and s.median_cv == pytest.approx(np.median(cvs))
    assert (s.min_cv, s.max_cv) == pytest.approx((min(cvs), max(cvs)))
    e = result.evaluation_noise["is"]
    assert e.points == 21 and e.median_cv < s.min_cv


def test_trend_lines_on_log_values():
    t = analyse(sweep()).trends["is"]
    assert [(f.first, f.last) for f in t.lines] == [(8, 512), (8, 64), (64, 512)]
    # on log values, the scale of the intervals: the slope is the log change per doubling
    xs = [math.log2(p.record.global_batch_size) for p in sweep()]
    ys = [math.log(p.record.final.is_mean) for p in sweep()]
    assert t.lines[0].slope == pytest.approx(np.polyfit(xs, ys, 1)[0])
    assert t.lines[0].ratio_per_doubling == pytest.approx(math.exp(t.lines[0].slope))
    assert t.means_p == pytest.approx(2 / 5040) and t.spearman_p_at_floor


def test_plateau_per_curve_against_the_seed_spread():
    # batch 512: finals 6.0, 6.2, 6.4 (seed sd 0.2); last intervals +0.5, +0.1, -0.05
    points = [make_point(512, 0, 0, 20.0, curve=[5.0, 5.5, 6.0]),
              make_point(512, 1, 0, 20.0, curve=[5.9, 6.1, 6.2]),
              make_point(512, 2, 0, 20.0, curve=[6.0, 6.45, 6.4]),
              make_point(64, 0, 0, 40.0, curve=[3.0, 4.0])]
    [g64, g512] = sv.plateau(points)
    assert g512.seed_sd == pytest.approx(0.2) and g512.steps == 100
    assert [(c.seed, c.flattened) for c in g512.curves] == [(0, False), (1, True), (2, True)]
    assert (g512.curves[0].is_change, g512.curves[0].from_step, g512.curves[0].to_step) == (
        pytest.approx(0.5), 66, 100)
    assert g64.seed_sd is None and g64.curves[0].flattened is None  # one seed: no spread


def test_the_rendered_section_holds_the_typed_values():
    study = study_of(sweep(seeds=6) + controls())
    result = sv.compute(study, {})
    md = sv.render(result, study)
    for c in result.comparisons:
        assert sv.HEADING.format(label=c.label.capitalize(), a=c.baseline, b=c.target) in md
        for v in c.verdicts:
            assert f"| {v.direction.value} | {v.size or '-'} |" in md
    assert "| 512 x 100 | at equal steps |" in md  # a plateau row
    no_pair = sv.compute(study_of(sweep()[:7]), {})  # one seed each, batch 64 present
    assert sv.render(no_pair, study) and no_pair.comparisons[0].verdicts[0].direction \
        == D.NO_VERDICT
