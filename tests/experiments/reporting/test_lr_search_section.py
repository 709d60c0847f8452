"""The v5 section on a planted search: it reads the factor from each point's lr, chooses the
planted best factors, renders its tables and draws its three figures; without search points
it reports nothing."""
import dataclasses
import math
import os

from fake_results import make_point, study_of

from experiments.config import StudyComparison
from experiments.reporting.sections import lr_search as section

BASE_LR = 2e-4
ARMS = {0.5: "lr_x0p5", 1.0: "constant_lr", 2.0: "lr_x2", 4.0: "lr_x4"}
COMPARISON = StudyComparison(headline_arm="constant_lr", lr_search_arms=("lr_x0p5", "lr_x2",
                                                                         "lr_x4"),
                             lr_search_reuses=("constant_lr",))


def search_point(batch, factor, seed, steps_to_7, cap=6000):
    at = list(range(100, cap + 1, 100))
    curve = [7.0 * s / steps_to_7 for s in at]
    p = make_point(batch, seed, curve[-1], 50.0, steps=cap, curve=curve)
    cfg = p.config.with_overrides({"train.g_lr": BASE_LR * factor,
                                   "train.d_lr": BASE_LR * factor})
    return dataclasses.replace(p, config=cfg, record=p.record.replace(arm=ARMS[factor]))


def planted(batches=(16, 64, 256, 512)):
    points = []
    for b in batches:
        best = 1.2 * (b / 64) ** 0.5
        for f in ARMS:
            for s in (0, 1):
                steps = 800 * (1 + 100 / b) * math.exp(math.log(f / best) ** 2 + 0.01 * s)
                points.append(search_point(b, f, s, steps))
    return points


def test_the_section_chooses_the_planted_factors_and_draws_its_figures(tmp_path):
    study = study_of(planted(), root=tmp_path, comparison=COMPARISON,
                     arms=tuple(ARMS.values()), bootstrap=50)
    result = section.compute(study, {})
    assert result.base_lr == BASE_LR and result.runs == 32
    row = next(r for r in result.rows if r.target == 7.0)
    # nearest grid factor to 1.2 (B / 64)^0.5: 0.6 -> 0.5, 1.2 -> 1, 2.4 -> 2, 3.4 -> 4 (the
    # grid's top: not bracketed, and 8 is the run to do next)
    assert {b: c.factor for b, c in row.choices.items()} == {
        "16": 0.5, "64": 1.0, "256": 2.0, "512": 4.0}
    assert row.choices["512"].bracket == "best at the highest factor"
    assert row.choices["512"].next_factor == 8.0
    assert row.choices["64"].bracket == "bracketed"
    assert row.fits["all"].fit.b_crit > 0
    md = section.render(result, study)
    assert md.startswith("## The lr tuned per batch size (v5)")
    assert "| 7.0 | 0.5 / 1 / 2 / 4 |" in md
    section.draw(result, study)
    for name in section.FIGURES:
        assert os.path.exists(os.path.join(study.out_dir, name))


def test_without_search_points_the_section_is_absent(tmp_path):
    fixed = [p for p in planted() if p.record.arm == "constant_lr"]
    study = study_of(fixed, root=tmp_path, comparison=COMPARISON, arms=("constant_lr",))
    assert section.compute(study, {}) is None
