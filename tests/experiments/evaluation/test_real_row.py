"""The real-data row: a set against itself has FID 0, train against test does not, and the
row is computed once, then read from its cache (a numpy stand-in extractor, small counts)."""
import dataclasses
import os

import numpy as np
import pytest

from experiments.config import DataConfig, EvalConfig
from experiments.evaluation import real_row
from experiments.evaluation.classifiers.base import iterate_batches
from experiments.records import RealRow


class PooledPixels:
    """Features: 8x8 average-pooled pixels (64); logits: a fixed projection of them."""
    name, version, resize_method, feature_layer = "pooled", "v1", "none", "pool 4x4"
    feature_dim, num_classes = 64, 10
    label_datasets, label_offset = ("fashion_mnist",), 0
    weights = np.random.default_rng(0).normal(size=(64, 10))

    def __init__(self):
        self.seen = 0

    def activations(self, images, batch_size=500):
        feats = []
        for batch in iterate_batches(images, batch_size):
            x = np.asarray(batch, np.float64)
            feats.append(x.reshape(len(x), 8, 4, 8, 4).mean(axis=(2, 4)).reshape(len(x), 64))
            self.seen += len(x)
        feats = np.concatenate(feats)
        return feats @ self.weights, feats


EVAL = EvalConfig(protocol="custom", num_real=300, num_fake=300, batch_size=100)


@pytest.fixture
def side(tmp_path):
    return real_row.RealSide(DataConfig(), EVAL, PooledPixels(), tmp_path, train_count=2000,
                             test_count=500)


def test_a_set_against_itself_has_fid_zero(side):
    row = real_row.compute(side, EVAL, stand_in_split="test", cas_recipe=None)
    # TF-GAN's matrix square root leaves rounding of order 1e-5 on 300 x 128 features (measured
    # 9.0e-6 here), four orders below the train-vs-test FID of the same sizes (0.28)
    assert abs(row.scores.fid) < 1e-4 and abs(row.self_fid) < 1e-4
    assert row.scores.precision == 1.0 and row.scores.recall == 1.0
    assert row.scores.is_mean == pytest.approx(row.reference_is_mean)


def test_train_against_test_is_the_row_and_is_cached(side, tmp_path):
    row = real_row.real_row(side, EVAL, cas_recipe=None)
    assert row.stand_in_split == "train" and row.scores.n_fake == 300
    assert row.scores.fid > 1e-3 and abs(row.self_fid) < 1e-4
    assert 0 < row.scores.accuracy < 1 and row.cas_ceiling is None
    assert set(row.memorisation_threshold) == {"pixels", "pooled"}
    assert 0 < row.memorisation_threshold["pixels"] < row.memorisation_test_median["pixels"]
    assert RealRow.from_dict(row.to_dict()) == row
    seen, files = side.classifier.seen, sorted(os.listdir(tmp_path))
    again = real_row.real_row(side, EVAL, cas_recipe=None)
    assert again == row and side.classifier.seen == seen  # nothing classified again
    assert sorted(os.listdir(tmp_path)) == files
    other = real_row.real_row(side, dataclasses.replace(EVAL, seed=7), cas_recipe=None)
    assert other.cache_key != row.cache_key and len(os.listdir(tmp_path)) == len(files) + 1
