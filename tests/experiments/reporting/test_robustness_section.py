"""The robustness section: per batch scores under each extractor, CAS and memorisation, the
baseline -> target change with a Welch interval, and the ranking agreement between extractors,
on synthetic records whose answers are known."""
import json
import math

import numpy as np
from scipy import stats

from experiments.records import CasRecipe, CasScore, MemorisationScore, RealRow
from experiments.reporting.sections import robustness
from tests.experiments.reporting.fake_results import PROTOCOL, make_point, study_of

RECIPE = CasRecipe()
SECOND = "fashion_mnist_resnet"


def scored(batch, seed, is_own, is_second, cas, memorised, arm=""):
    p = make_point(batch, seed, is_own, 1000.0 / is_own)
    second = p.record.final.replace(is_mean=is_second, fid=500.0 / is_second,
                                    protocol=PROTOCOL.replace(classifier=SECOND))
    mem = MemorisationScore(space="pixels", classifier=None, classifier_version=None,
                            n_generated=100, n_test=100, n_train=1000, percentile=5.0,
                            threshold=3.0, fraction_closer=memorised, generated_median=5.0,
                            test_median=5.0, closest=[], seed=1, bn_mode="batch",
                            wall_time_s=1.0)
    score = CasScore(recipe=RECIPE, trained_on="generated", accuracy=cas,
                     per_class_accuracy=[cas] * 10, n_train=100, n_test=100,
                     train_accuracy_last_epoch=0.9, train_time_s=1.0, wall_time_s=1.0)
    record = p.record.replace(arm=arm, evaluations={f"tiny/batch/{SECOND}": second},
                              cas={RECIPE.key: score}, memorisation={mem.key: mem})
    return p.__class__(p.dir, p.config, record, p.history)


def sweep(second_order=(16, 64, 512)):
    """IS rises with batch under the own extractor; the second ranks batches `second_order`
    (lowest first)."""
    rank = {b: i for i, b in enumerate(second_order)}
    return [scored(b, s, 3.0 + i + 0.1 * s, 2.0 + rank[b] + 0.1 * s, 0.3 + 0.1 * i + 0.01 * s,
                   0.05 * (1 + s))
            for i, b in enumerate((16, 64, 512)) for s in range(3)]


def test_rows_hold_every_column_with_its_seed_mean():
    result = robustness.compute(study_of(sweep()), {})
    assert result.extractors == ("fashion_mnist_classifier", SECOND)
    assert result.cas_recipe == RECIPE.key
    row = next(r for r in result.rows if r.batch == 64)
    assert row.arm == robustness.MAIN_ARM and row.metrics[f"is@{SECOND}"].n == 3
    assert math.isclose(row.metrics["is@fashion_mnist_classifier"].mean, 4.1)
    assert math.isclose(row.metrics[f"is@{SECOND}"].mean, 3.1)
    assert math.isclose(row.metrics["cas"].mean, 0.41)
    assert math.isclose(row.metrics["memorised@pixels"].mean, 0.1)


def test_change_is_welchs_ratio_of_geometric_means():
    points = sweep()
    result = robustness.compute(study_of(points), {})
    change = next(c for c in result.changes if c.metric == "cas")
    a = np.log([0.4, 0.41, 0.42])
    b = np.log([0.5, 0.51, 0.52])
    t = stats.ttest_ind(b, a, equal_var=False)
    ci = t.confidence_interval(0.95)
    assert (change.baseline_arm, change.baseline_batch, change.target_arm, change.target_batch) \
        == ("equal_steps", 64, "equal_steps", 512)
    assert math.isclose(change.interval.ratio, math.exp(b.mean() - a.mean()))
    assert math.isclose(change.interval.low, math.exp(ci.low))
    assert change.direction == robustness.CHANGED[True]


def test_rank_agreement_is_one_when_extractors_agree_and_falls_when_they_do_not():
    same = robustness.compute(study_of(sweep()), {}).ranks
    flipped = robustness.compute(study_of(sweep(second_order=(512, 64, 16))), {}).ranks
    assert [(r.metric, r.rho) for r in same] == [("is", 1.0), ("fid", 1.0)]
    assert [(r.metric, r.rho) for r in flipped] == [("is", -1.0), ("fid", -1.0)]
    assert same[0].p_value == 1 / 3  # exact: 2 of 6 orderings reach |rho| = 1


def test_no_robustness_scores_no_section():
    assert robustness.compute(study_of([make_point(64, 0, 4.0, 40.0)]), {}) is None


def test_real_rows_are_read_from_the_sweep(tmp_path):
    p = make_point(64, 0, 8.7, 3.0, accuracy=0.96)
    ceiling = CasScore(recipe=RECIPE, trained_on="train", accuracy=0.72,
                       per_class_accuracy=[0.72] * 10, n_train=100, n_test=100,
                       train_accuracy_last_epoch=0.9, train_time_s=1.0, wall_time_s=1.0)
    row = RealRow(cache_key={}, stand_in_split="train", scores=p.record.final,
                  reference_is_mean=8.65, reference_is_std=0.1, self_fid=0.0,
                  cas_ceiling=ceiling, memorisation_percentile=5.0,
                  memorisation_threshold={"pixels": 3.9}, memorisation_test_median={},
                  wall_time_s=1.0)
    (tmp_path / robustness.REAL_ROWS).mkdir()
    (tmp_path / robustness.REAL_ROWS / "fast_x.json").write_text(json.dumps(row.to_dict()))
    result = robustness.compute(study_of(sweep(), root=tmp_path), {})
    assert [(r.extractor, r.is_mean, r.cas_ceiling) for r in result.real] == [
        ("fashion_mnist_classifier", 8.7, 0.72)]
    text = robustness.render(result, study_of(sweep(), root=tmp_path))
    assert "| fashion_mnist_classifier | 500 train | 8.70 |" in text
    json.dumps(result.to_dict())  # what analysis.json holds
