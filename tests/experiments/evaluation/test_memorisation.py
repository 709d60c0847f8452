"""Memorisation check: exact nearest neighbours, planted copies flagged, held-out images not.

Pure numpy on the real Fashion-MNIST IDX files (no TensorFlow): images scaled to [-1, 1] as
the GAN sees them (the 2-pixel padding to 32x32 adds the same constant to every image, so it
changes no distance)."""
import numpy as np
import pytest

from experiments.data import load_fashion_mnist_arrays
from experiments.evaluation import memorisation
from experiments.records import MemorisationScore


@pytest.fixture(scope="module")
def fashion():
    """3,000 training images, and two disjoint sets of 1,000 test images, in [-1, 1]."""
    train, _ = load_fashion_mnist_arrays("train")
    test, labels = load_fashion_mnist_arrays("test")
    scale = lambda x: x.astype(np.float32)[..., None] / 127.5 - 1.0  # noqa: E731
    return scale(train[:3000]), scale(test[:1000]), scale(test[1000:2000]), labels[1000:2000]


def test_nearest_neighbours_match_brute_force_float64():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(700, 40)) + 5.0  # off-centre: a^2 + b^2 - 2ab would lose digits
    queries = np.concatenate([ref[[3, 500]] + 1e-4, rng.normal(size=(300, 40)) + 5.0])
    found = memorisation.nearest_neighbours(queries, ref.astype(np.float32))
    full = np.linalg.norm(queries[:, None, :] - ref[None, :, :].astype(np.float32), axis=2)
    np.testing.assert_array_equal(found.indices, full.argmin(axis=1))
    np.testing.assert_allclose(found.distances, full.min(axis=1), rtol=1e-12)
    assert found.indices[:2].tolist() == [3, 500]


def test_exact_copies_are_at_distance_zero(fashion):
    train = fashion[0]
    found = memorisation.nearest_neighbours(train[[7, 2999, 0]], train)
    assert found.indices.tolist() == [7, 2999, 0]
    assert found.distances.tolist() == [0.0, 0.0, 0.0]


def test_planted_copies_are_flagged_and_held_out_images_are_not(fashion):
    train, test, held_out, _ = fashion
    rng = np.random.default_rng(1)
    copies = train[rng.choice(len(train), 500, replace=False)]
    noisy = np.clip(copies + rng.normal(0, 0.05, copies.shape).astype(np.float32), -1, 1)
    thresholds = {}
    for name, generated, low, high in [("copies", copies, 1.0, 1.0),
                                       ("copies + noise 0.05", noisy, 0.99, 1.0),
                                       ("held-out test images", held_out, 0.0, 0.10)]:
        c = memorisation.compare(generated, train, 5.0, test=test)
        assert low <= c.fraction_closer <= high, (name, c.fraction_closer)
        thresholds[name] = c.threshold
    # the threshold is the test images' 5th percentile, whatever is compared against it
    assert len(set(thresholds.values())) == 1 and thresholds["copies"] > 3.0


def test_held_out_fraction_is_near_the_percentile(fashion):
    """1,000 unseen test images against another 1,000's 5th percentile: ~5% closer
    (binomial sd 0.7%)."""
    train, test, held_out, _ = fashion
    c = memorisation.compare(held_out, train, 5.0, test=test)
    assert 0.02 <= c.fraction_closer <= 0.09


def test_check_in_pixels_and_features_records_the_closest_pairs(fashion):
    train, test, held_out, labels = fashion
    generated = np.concatenate([held_out[:200], train[[11, 22]]])  # two planted copies
    gen_labels = np.concatenate([labels[:200], [0, 1]])

    class Projection:  # a stand-in extractor: a fixed random projection of the pixels
        name, version = "projection", "p1"
        matrix = np.random.default_rng(2).normal(size=(784, 16))

        def activations(self, images, batch_size=500):
            f = np.asarray(images, np.float64).reshape(len(images), -1) @ self.matrix
            return f[:, :10], f

    out = memorisation.check(generated, train, test, Projection(), labels=gen_labels,
                             seed=3, bn_mode="batch", k=4)
    assert set(out) == {"pixels", "projection"}
    for space, (record, _) in out.items():
        assert [(p.generated_index, p.train_index) for p in record.closest[:2]] in (
            [(200, 11), (201, 22)], [(201, 22), (200, 11)]), space
        assert record.closest[0].distance == 0.0 and len(record.closest) == 4
        assert record.n_generated == 202 and record.n_test == 1000 and record.n_train == 3000
        assert record.fraction_closer < 0.15
        assert MemorisationScore.from_dict(record.to_dict()) == record
    assert out["projection"][0].classifier_version == "p1"
    assert out["pixels"][0].key == "pixels/n202/p5/seed3/batch"
    assert out["projection"][0].key == "projection@p1/n202/p5/seed3/batch"


def test_precomputed_test_neighbours_give_the_same_answer(fashion):
    train, test, held_out, _ = fashion
    ref = memorisation.nearest_neighbours(test, train)
    a = memorisation.compare(held_out, train, 5.0, test=test)
    b = memorisation.compare(held_out, train, 5.0, test_neighbours=ref)
    assert (a.threshold, a.fraction_closer) == (b.threshold, b.fraction_closer)
    with pytest.raises(ValueError, match="one of them"):
        memorisation.compare(held_out, train, 5.0)
    with pytest.raises(ValueError, match="percentile"):
        memorisation.compare(held_out, train, 0.0, test=test)


def test_closest_pairs_figure_writes_png_and_pdf(fashion, tmp_path):
    train, test, held_out, labels = fashion
    c = memorisation.compare(held_out[:50], train, 5.0, test=test)
    pairs = c.closest(6, labels[:50])
    path = str(tmp_path / "closest.png")
    memorisation.closest_pairs_figure(held_out[:50], train, pairs, path, title="closest",
                                      class_names=[f"c{i}" for i in range(10)])
    assert (tmp_path / "closest.png").stat().st_size > 1000
    assert (tmp_path / "closest.pdf").stat().st_size > 1000
    assert [p.distance for p in pairs] == sorted(p.distance for p in pairs)
