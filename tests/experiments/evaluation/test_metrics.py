"""IS, FID and KID (TF-GAN through experiments.metrics) against independent numpy/scipy code."""
import numpy as np
import pytest
import scipy.linalg
import scipy.special

from experiments.evaluation import metrics

RTOL = 1e-6


# -- independent references ---------------------------------------------------------------------
def numpy_inception_score(logits, splits):
    """Salimans et al. (improved-gan) with scipy's softmax; consecutive splits."""
    scores = []
    n = len(logits)
    for i in range(splits):
        p = scipy.special.softmax(logits[i * n // splits:(i + 1) * n // splits], axis=1)
        py = p.mean(axis=0, keepdims=True)
        kl = np.sum(scipy.special.rel_entr(p, py), axis=1)
        scores.append(np.exp(kl.mean()))
    return np.mean(scores), np.std(scores)


def scipy_frechet_distance(a, b):
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a, s_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = scipy.linalg.sqrtm(s_a @ s_b).real
    return float(np.sum((mu_a - mu_b) ** 2) + np.trace(s_a + s_b - 2 * covmean))


def numpy_kid_blocks(a, b, n_blocks):
    """Unbiased MMD^2 with k(x, y) = (x.y / d + 1)^3 per block; mean and standard error."""
    d = a.shape[1]
    k = lambda x, y: (x @ y.T / d + 1) ** 3  # noqa: E731
    ests = []
    for ra, rb in zip(np.array_split(a, n_blocks), np.array_split(b, n_blocks)):
        m, n = len(ra), len(rb)
        k_aa, k_bb = k(ra, ra), k(rb, rb)
        ests.append((k_aa.sum() - np.trace(k_aa)) / (m * (m - 1))
                    + (k_bb.sum() - np.trace(k_bb)) / (n * (n - 1)) - 2 * k(ra, rb).mean())
    ests = np.array(ests)
    return ests.mean(), ests.std(ddof=1) / np.sqrt(n_blocks)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# -- Inception Score ----------------------------------------------------------------------------
@pytest.mark.parametrize("splits", [1, 3, 10])
def test_inception_score_matches_numpy(rng, splits):
    logits = rng.normal(scale=3.0, size=(1003, 10))
    got = metrics.inception_score(logits, splits=splits)
    want = numpy_inception_score(logits, splits)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL)
    np.testing.assert_allclose(got[1], want[1], rtol=RTOL, atol=1e-12)


def test_uniform_logits_give_score_one(rng):
    mean, std = metrics.inception_score(np.zeros((500, 10)) + rng.normal(size=(500, 1)))
    assert mean == pytest.approx(1.0, abs=1e-12) and std == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("classes", [10, 1008])
def test_confident_balanced_logits_give_number_of_classes(classes):
    labels = np.arange(classes * 20) % classes
    logits = 100.0 * np.eye(classes)[labels]  # one-hot, very confident, each class equally often
    mean, _ = metrics.inception_score(logits, splits=1)
    assert mean == pytest.approx(classes, rel=1e-9)


def test_inception_score_rejects_too_many_splits():
    with pytest.raises(ValueError, match="split"):
        metrics.inception_score(np.zeros((5, 10)), splits=10)


# -- FID ----------------------------------------------------------------------------------------
def test_frechet_distance_matches_scipy(rng):
    a = rng.normal(size=(2000, 64)) @ rng.normal(size=(64, 64)) * 0.3
    b = rng.normal(loc=0.2, size=(1500, 64)) @ rng.normal(size=(64, 64)) * 0.3
    np.testing.assert_allclose(metrics.frechet_distance(a, b), scipy_frechet_distance(a, b),
                               rtol=RTOL)


def test_frechet_distance_of_a_set_with_itself_is_zero(rng):
    x = rng.normal(size=(1000, 32))
    assert abs(metrics.frechet_distance(x, x)) < 1e-8


def test_equal_covariances_give_squared_mean_difference(rng):
    x = rng.normal(size=(1000, 16))
    shift = rng.normal(size=16)
    np.testing.assert_allclose(metrics.frechet_distance(x, x + shift), np.sum(shift ** 2),
                               rtol=1e-6)


def test_frechet_distance_handles_rank_deficient_features(rng):
    """Dead ReLU units give zero-variance features; the SVD square root must cope."""
    a, b = rng.normal(size=(800, 20)), rng.normal(size=(800, 20)) + 0.5
    a[:, :5] = b[:, :5] = 0.0
    fid = metrics.frechet_distance(a, b)
    np.testing.assert_allclose(fid, scipy_frechet_distance(a[:, 5:], b[:, 5:]), rtol=1e-6)


def test_frechet_distance_rejects_mismatched_dims(rng):
    with pytest.raises(ValueError, match="dimensions differ"):
        metrics.frechet_distance(rng.normal(size=(10, 3)), rng.normal(size=(10, 4)))


# -- KID ----------------------------------------------------------------------------------------
def test_kernel_distance_matches_numpy_blocks(rng):
    a = rng.normal(size=(1000, 24))
    b = rng.normal(loc=0.1, scale=1.1, size=(600, 24))
    got = metrics.kernel_distance(a, b, subsets=10, seed=None)
    want = numpy_kid_blocks(a, b, 10)
    np.testing.assert_allclose(got, want, rtol=RTOL)


def test_kernel_distance_shuffles_with_its_seed(rng):
    a, b = rng.normal(size=(400, 8)), np.sort(rng.normal(size=(400, 8)) + 0.3, axis=0)
    perm = np.random.default_rng(5)
    want = numpy_kid_blocks(a[perm.permutation(400)], b[perm.permutation(400)], 4)
    np.testing.assert_allclose(metrics.kernel_distance(a, b, subsets=4, seed=5), want,
                               rtol=RTOL)


def test_kernel_distance_is_near_zero_for_one_distribution(rng):
    a, b = rng.normal(size=(2000, 16)), rng.normal(size=(2000, 16))
    mean, stderr = metrics.kernel_distance(a, b)
    assert abs(mean) < 3 * stderr + 1e-3
    far, _ = metrics.kernel_distance(a, b + 1.0)
    assert far > 100 * abs(mean)
