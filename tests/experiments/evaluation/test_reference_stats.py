"""Reference-feature cache: computed once, reused, invalidated by any change of its key."""
import dataclasses
import logging
import os

import numpy as np
import pytest

from experiments.config import DataConfig, EvalConfig
from experiments.data import fashion_mnist_images
from experiments.evaluation import reference_stats
from experiments.evaluation.classifiers.base import iterate_batches


class CountingClassifier:
    """Features = per-image statistics; counts the images it classified."""

    name = "counting"
    resize_method = "none"
    feature_layer = "x"
    feature_dim = 3
    num_classes = 2

    def __init__(self, version="v1"):
        self.version = version
        self.seen = 0

    def activations(self, images, batch_size=500):
        feats = []
        for batch in iterate_batches(images, batch_size):
            x = np.asarray(batch, np.float64).reshape(len(batch), -1)
            feats.append(np.stack([x.mean(1), x.std(1), x[:, 100]], axis=1))
            self.seen += len(batch)
        feats = np.concatenate(feats)
        return feats[:, :2], feats


DATA = DataConfig()
EVAL = EvalConfig(protocol="custom", num_real=300, num_fake=100, batch_size=128)


def test_features_are_the_first_images_of_the_split(tmp_path):
    clf = CountingClassifier()
    feats = reference_stats.reference_activations(DATA, EVAL, clf, tmp_path)
    want = clf.activations(fashion_mnist_images("test")[0][:300])[1]
    np.testing.assert_array_equal(feats, want)
    assert feats.dtype == np.float64 and feats.shape == (300, 3)


def test_second_call_reads_the_cache(tmp_path):
    clf = CountingClassifier()
    first = reference_stats.reference_statistics(DATA, EVAL, clf, tmp_path)
    assert clf.seen == 300
    second = reference_stats.reference_statistics(DATA, EVAL, clf, tmp_path)
    assert clf.seen == 300  # nothing classified again
    np.testing.assert_array_equal(first.features, second.features)
    np.testing.assert_allclose(second.mu, first.features.mean(0), rtol=1e-12)
    np.testing.assert_allclose(second.sigma, np.cov(first.features, rowvar=False), rtol=1e-12)
    assert os.listdir(tmp_path) == [os.path.basename(first.path)]  # no temp files left


@pytest.mark.parametrize("change", [
    dict(classifier=CountingClassifier("v2")),
    dict(eval_cfg=dataclasses.replace(EVAL, num_real=200)),
    dict(eval_cfg=dataclasses.replace(EVAL, reference_split="train")),
    dict(data_cfg=DataConfig(resolution=64)),
    dict(data_cfg=DataConfig(resize_method="resize")),
])
def test_any_change_of_the_key_recomputes(tmp_path, change):
    base = dict(data_cfg=DATA, eval_cfg=EVAL, classifier=CountingClassifier())
    old = reference_stats.reference_statistics(**base, cache_dir=tmp_path)
    new_args = {**base, **change}
    clf = new_args["classifier"] = change.get("classifier", CountingClassifier())
    new = reference_stats.reference_statistics(**new_args, cache_dir=tmp_path)
    assert clf.seen == new_args["eval_cfg"].num_real
    assert new.path != old.path and len(os.listdir(tmp_path)) == 2


@pytest.mark.parametrize("attribute,value", [("resize_method", "bilinear to 299"),
                                             ("feature_layer", "pool_3")])
def test_classifier_resize_and_feature_layer_are_part_of_the_key(tmp_path, attribute, value):
    a, b = CountingClassifier(), CountingClassifier()
    setattr(b, attribute, value)
    keys = [reference_stats.cache_key(DATA, EVAL, c) for c in (a, b)]
    assert reference_stats.cache_path(tmp_path, keys[0]) != \
        reference_stats.cache_path(tmp_path, keys[1])


def test_foreign_or_corrupt_files_are_recomputed(tmp_path, caplog):
    caplog.set_level(logging.INFO)

    def messages():
        return [r.getMessage() for r in caplog.records]

    clf = CountingClassifier()
    path = reference_stats.reference_statistics(DATA, EVAL, clf, tmp_path).path
    with np.load(path) as npz:
        arrays = dict(npz)
    np.savez(path, **{**arrays, "key": np.array('{"another": "protocol"}')})
    caplog.clear()
    reference_stats.reference_statistics(DATA, EVAL, clf, tmp_path)
    assert clf.seen == 600 and "another protocol" in messages()[0]

    with open(path, "wb") as f:
        f.write(b"not a zip file")
    reference_stats.reference_statistics(DATA, EVAL, clf, tmp_path)
    assert clf.seen == 900 and "unreadable" in messages()[-2]

    np.savez(path, **{**arrays, "features": np.array([object()])})  # would need pickle
    reference_stats.reference_statistics(DATA, EVAL, clf, tmp_path)
    assert clf.seen == 1200 and "unreadable" in messages()[-2]


def test_default_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(reference_stats.ENV_VAR, str(tmp_path / "cache"))
    stats = reference_stats.reference_statistics(DATA, EVAL, CountingClassifier())
    assert os.path.dirname(stats.path) == str(tmp_path / "cache")


def test_too_many_real_images_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="has 10000 images"):
        reference_stats.reference_activations(
            DATA, dataclasses.replace(EVAL, num_real=10_001), CountingClassifier(), tmp_path)
