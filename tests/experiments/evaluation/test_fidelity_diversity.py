"""Precision/recall and density/coverage against an independent brute-force reference and
known answers (identical sets, disjoint sets, half the modes)."""
import numpy as np
import pytest

from experiments.evaluation import fidelity_diversity


def _brute_force_prdc(real, fake, k_pr, k_dc):
    """Independent reference: full distance matrices with scipy, no blocking."""
    from scipy.spatial.distance import cdist

    def radii(x, k):
        return np.sort(cdist(x, x), axis=1)[:, k]

    rr, rf = radii(real, k_pr), radii(fake, k_pr)
    d_fr = cdist(fake, real)
    precision = np.mean((d_fr <= rr[None, :]).any(axis=1))
    recall = np.mean((d_fr.T <= rf[None, :]).any(axis=1))
    rr5 = radii(real, k_dc)
    density = (d_fr < rr5[None, :]).sum() / (k_dc * len(fake))
    coverage = np.mean((d_fr < rr5[None, :]).any(axis=0))
    return precision, recall, density, coverage


def test_precision_recall_density_coverage_match_brute_force():
    rng = np.random.default_rng(1)
    real = rng.normal(size=(1500, 8))  # more than one distance block
    fake = rng.normal(size=(700, 8)) * 1.3 + 0.4
    pr = fidelity_diversity.precision_recall(real, fake, k=3)
    dc = fidelity_diversity.density_coverage(real, fake, k=5)
    ref = _brute_force_prdc(real, fake, 3, 5)
    got = (pr["precision"], pr["recall"], dc["density"], dc["coverage"])
    assert got == pytest.approx(ref, abs=1e-12)


def test_float32_distances_differ_from_float64_by_a_pair_at_most_even_far_from_the_origin():
    """What DISTANCE_DTYPE costs, on clustered 128-d features offset far from 0 (the case
    that makes a^2 + b^2 - 2ab lose digits without centring): counted pair by pair."""
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(10, 128)) * 3 + 40.0
    real = centres[rng.integers(10, size=3000)] + rng.normal(size=(3000, 128))
    fake = centres[rng.integers(10, size=1500)] + 1.1 * rng.normal(size=(1500, 128))
    precision, recall, density, coverage = _brute_force_prdc(real, fake, 3, 5)  # float64
    got = fidelity_diversity.RealManifold(real, 3, 5).fidelity_diversity(fake)
    assert abs(got["precision"] - precision) * len(fake) <= 1
    assert abs(got["recall"] - recall) * len(real) <= 1
    assert abs(got["density"] - density) * 5 * len(fake) <= 2
    assert abs(got["coverage"] - coverage) * len(real) <= 1
    assert 0.05 < precision < 0.95 and 0.05 < coverage < 0.95  # not a trivial case


def test_known_answers():
    rng = np.random.default_rng(2)
    real = rng.normal(size=(400, 2))
    same = fidelity_diversity.precision_recall(real, real.copy())
    assert same == {"precision": 1.0, "recall": 1.0}
    far = fidelity_diversity.precision_recall(real, real + 100.0)
    assert far == {"precision": 0.0, "recall": 0.0}
    # real: two well-separated modes; fake: only the first -> precision 1, recall ~0.5
    modes = np.concatenate([rng.normal(size=(500, 2)), rng.normal(size=(500, 2)) + 50])
    half = rng.normal(size=(500, 2))
    pr = fidelity_diversity.precision_recall(modes, half)
    assert pr["precision"] > 0.97 and pr["recall"] == pytest.approx(0.5, abs=0.03)
    dc = fidelity_diversity.density_coverage(modes, half)
    assert dc["coverage"] == pytest.approx(0.5, abs=0.03)
    # density ~ 1 for two large samples of one distribution
    a, b = rng.normal(size=(3000, 2)), rng.normal(size=(3000, 2))
    assert fidelity_diversity.density_coverage(a, b)["density"] == pytest.approx(1.0, abs=0.1)


def test_too_few_samples_for_k_are_refused():
    with pytest.raises(ValueError, match="k=3 needs more than 3 samples"):
        fidelity_diversity.precision_recall(np.zeros((3, 2)), np.zeros((10, 2)))
    with pytest.raises(ValueError, match="k=5 needs more than 5 samples"):
        fidelity_diversity.density_coverage(np.zeros((5, 2)), np.zeros((10, 2)))
