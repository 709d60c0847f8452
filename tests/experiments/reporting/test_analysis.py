"""The study's answer from in-memory points: comparisons, verdicts, noise and plateaus."""
import math

import numpy as np
import pytest
from fake_results import make_point

from experiments.reporting.lib import stats as st
from experiments.reporting.sections import verdicts as analysis

BATCHES = (8, 16, 32, 64, 128, 256, 512)


def sweep(seeds=3, gain=0.5, spread=0.1):
    """IS rising by `gain` per doubling, seed k offset by `spread` * (k - 1)."""
    points = []
    for s in range(seeds):
        for i, b in enumerate(BATCHES):
            points.append(make_point(b, s, 3.0 + gain * i + spread * (s - 1),
                                     1000.0 / (1 + 0.2 * i) + 10 * s,
                                     accuracy=0.1 + 0.08 * i + 0.01 * s,
                                     replicates=(3.0 + gain * i + 0.01,)))
    return points


def test_equal_steps_comparison_and_verdicts():
    result = analysis.analyse(sweep())
    assert result["target_batch"] == 512 and result["baseline_batch"] == 64
    [c] = result["comparisons"]
    assert c["name"] == "equal_steps" and c["baseline"]["seeds"] == [0, 1, 2]
    v = {x["metric"]: x for x in c["verdicts"]}
    assert v["is"]["primary"] and v["is"]["direction"] == st.REPRODUCED
    assert v["is"]["size"] == "smaller than the paper's +50%"  # 4.5 -> 6.0: +33%, tight
    assert c["metrics"]["is"]["interval"]["ratio"] == pytest.approx(
        np.exp(np.mean(np.log([6.0 - 0.1 + 0.1 * s for s in range(3)]))
               - np.mean(np.log([4.5 - 0.1 + 0.1 * s for s in range(3)]))))
    assert not v["fid"]["primary"] and v["fid"]["size"] is None
    p = {m: c["metrics"][m]["interval"]["p_value"] for m in ("fid", "acc")}
    assert {m: c["metrics"][m]["holm_p"] for m in p} == pytest.approx(st.holm(p))
    assert "Holm-adjusted p" in v["acc"]["text"]
    assert c["metrics"]["is"]["exact"]["p_value"] is None  # 3 vs 3: not run
    assert c["metrics"]["is"]["paired"]["method"] == st.PAIRED
    assert result["equal_images_note"].startswith("No equal-images control points")
    md = analysis.analysis_markdown(result)
    assert "Exact test not run" in md and "p = 0.10" in md
    assert "Sensitivity, seeds paired by index" in md


def test_six_seeds_run_the_exact_test():
    result = analysis.analyse(sweep(seeds=6))
    exact = result["comparisons"][0]["metrics"]["is"]["exact"]
    assert (exact["n_a"], exact["n_b"]) == (6, 6)
    assert exact["p_value"] == pytest.approx(2 / 924)  # complete separation
    assert "Exact test (Mann-Whitney U" in analysis.analysis_markdown(result)


def test_verdict_uses_the_target_batch_it_finds():
    points = [p for p in sweep() if p.record.global_batch_size <= 256]
    result = analysis.analyse(points)
    assert result["target_batch"] == 256
    texts = [v["text"] for v in result["comparisons"][0]["verdicts"]]
    assert all("(batch 64 -> 256, at equal steps)" in t for t in texts)
    assert not any("512" in t for t in texts)


def test_equal_images_comparison_pairs_controls_with_the_same_images():
    points = sweep()
    controls = [make_point(64, s, 5.0 + 0.1 * s, 700.0, accuracy=0.6, steps=800,
                           budget="equal_images") for s in range(3)]
    result = analysis.analyse(points + controls)
    steps, images = result["comparisons"]
    assert images["label"] == "equal images" and result["equal_images_note"] is None
    assert images["baseline"]["steps"] == 800 and images["target"]["steps"] == 100
    assert images["baseline"]["images_seen"] == images["target"]["images_seen"]
    assert images["baseline"]["is"]["mean"] == pytest.approx(5.1)
    # controls stay out of the batch-64 arm of the equal-steps comparison and of the trend
    assert steps["baseline"]["is"]["mean"] == pytest.approx(4.5)
    assert result["trends"]["is"]["n"] == 21
    v = {x["metric"]: x for x in images["verdicts"]}
    assert v["is"]["size"] is None and "at equal images" in v["is"]["text"]
    # controls with no batch-512 point at their images: said, not failed
    odd = [make_point(64, s, 5.0, 700.0, steps=700, budget="equal_images") for s in range(2)]
    note = analysis.analyse(points + odd)["equal_images_note"]
    assert "no batch-512 point saw the same 89,600 images" in note


def test_the_exact_test_runs_whenever_its_floor_is_below_p_05():
    # 3 controls vs 6 seeds at 512: the floor is 2/C(9,3) = 0.024 < 0.05, so it runs
    controls = [make_point(64, s, 5.0 + 0.1 * s, 700.0, accuracy=0.6, steps=800,
                           budget="equal_images") for s in range(3)]
    result = analysis.analyse(sweep(seeds=6) + controls)
    exact = result["comparisons"][1]["metrics"]["is"]["exact"]
    assert (exact["n_a"], exact["n_b"]) == (3, 6)
    assert exact["smallest_p"] == pytest.approx(2 / 84)
    assert exact["p_value"] == pytest.approx(2 / 84)  # complete separation: the floor
    md = analysis.analysis_markdown(result)
    assert "Exact test (Mann-Whitney U" in md and "cannot reach" not in md.split(
        "Equal images")[-1]


def test_seed_spread_is_the_floor_and_evaluation_noise_a_separate_line():
    result = analysis.analyse(sweep(spread=0.3))
    s = result["seed_spread"]["is"]
    cvs = [np.std([3.0 + 0.5 * i + 0.3 * (k - 1) for k in range(3)], ddof=1)
           / (3.0 + 0.5 * i) for i in range(7)]
    assert s["batch_sizes"] == 7 and s["median_cv"] == pytest.approx(np.median(cvs))
    assert (s["min_cv"], s["max_cv"]) == pytest.approx((min(cvs), max(cvs)))
    e = result["evaluation_noise"]["is"]
    assert e["points"] == 21 and e["median_cv"] < s["min_cv"]
    md = analysis.analysis_markdown(result)
    assert "Seed-to-seed spread of IS (the noise floor" in md
    assert md.index("Seed-to-seed spread of IS") < md.index("Evaluation noise of IS")


def test_trend_lines_report_which_fits():
    result = analysis.analyse(sweep())
    t = result["trends"]["is"]
    assert [(f["first"], f["last"]) for f in t["lines"]] == [(8, 512), (8, 64), (64, 512)]
    # on log values, the scale of the intervals: the slope is the log change per doubling
    xs = [math.log2(p.record.global_batch_size) for p in sweep()]
    ys = [math.log(p.record.final.is_mean) for p in sweep()]
    assert t["lines"][0]["slope"] == pytest.approx(np.polyfit(xs, ys, 1)[0])
    assert t["means_p"] == pytest.approx(2 / 5040) and t["spearman_p_at_floor"]
    md = analysis.analysis_markdown(result)
    assert "Monte Carlo p ≤ 1/10,001" in md and "exact p = 0.00040" in md
    assert "a line fits" in md


def test_plateau_per_curve_against_the_seed_spread():
    # batch 512: finals 6.0, 6.2, 6.4 (seed sd 0.2); last intervals +0.5, +0.1, -0.05
    points = [make_point(512, 0, 0, 20.0, curve=[5.0, 5.5, 6.0]),
              make_point(512, 1, 0, 20.0, curve=[5.9, 6.1, 6.2]),
              make_point(512, 2, 0, 20.0, curve=[6.0, 6.45, 6.4]),
              make_point(64, 0, 0, 40.0, curve=[3.0, 4.0])]
    [g64, g512] = analysis.plateau(points)
    assert g512["seed_sd"] == pytest.approx(0.2) and g512["steps"] == 100
    assert [(c["seed"], c["flattened"]) for c in g512["curves"]] == [
        (0, False), (1, True), (2, True)]
    assert g512["curves"][0]["is_change"] == pytest.approx(0.5)
    assert (g512["curves"][0]["from_step"], g512["curves"][0]["to_step"]) == (66, 100)
    assert g64["seed_sd"] is None and g64["curves"][0]["flattened"] is None
    md = analysis.analysis_markdown(dict(analysis.analyse(points), plateau=[g64, g512]))
    assert "flattened 2 of 3 curves (seeds 1, 2)" in md
    assert "vs seed spread -: flattened - of 1 curves (seeds -)" in md  # one seed: no spread
    assert "none is called converged" in md
