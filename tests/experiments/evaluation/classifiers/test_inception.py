"""The Inception loader, run offline against a tiny SavedModel with Inception's signature:
resizing, grey-to-RGB, signature-only exports, versions, TF-Hub's cache and fast failures."""
import hashlib
import os
import time

import numpy as np
import pytest
import tensorflow as tf

from experiments.config import EvalConfig
from experiments.evaluation import classifiers
from experiments.evaluation.classifiers import inception


class StandInInception(tf.Module):
    """Inception's interface on 299x299x3 in [-1, 1]: pool_3 = mean(relu(1x1 conv)), logits."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w = tf.Variable(rng.normal(size=(3, 16)).astype(np.float32))
        self.b = tf.Variable(rng.normal(size=(16,)).astype(np.float32))
        self.head = tf.Variable(rng.normal(size=(16, 11)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 299, 299, 3], tf.float32)])
    def __call__(self, images):
        hidden = tf.nn.relu(tf.einsum("nhwc,cf->nhwf", images, self.w) + self.b)
        pool = tf.reduce_mean(hidden, axis=[1, 2])
        return {"logits": pool @ self.head, "pool_3": pool, "mixed_7": hidden[:, :1, :1]}


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    path = tmp_path_factory.mktemp("inception") / "saved_model"
    module = StandInInception()
    tf.saved_model.save(module, str(path))
    return str(path), module


def test_inception_resizes_and_converts_grey_images(stand_in):
    path, module = stand_in
    clf = inception.load(path)
    assert (clf.feature_dim, clf.num_classes, len(clf.version)) == (16, 11, 64)
    grey = np.linspace(-1, 1, 5, dtype=np.float32)[:, None, None, None] * np.ones(
        (1, 32, 32, 1), np.float32)  # constant images: bilinear resizing keeps the value
    logits, features = clf.activations(grey, batch_size=2)
    w, b, head = module.w.numpy(), module.b.numpy(), module.head.numpy()
    expected = np.maximum(grey[:, 0, 0, :] * w.sum(0) + b, 0)  # 3 equal channels -> sum(w)
    # float32 means over 299 * 299 pixels: ~1e-4 relative rounding
    np.testing.assert_allclose(features, expected, rtol=2e-3, atol=1e-5)
    np.testing.assert_allclose(logits, expected @ head, rtol=2e-3, atol=1e-3)


def test_inception_rgb_at_any_size_matches_direct_call(stand_in):
    path, module = stand_in
    clf = classifiers.load_classifier(EvalConfig(classifier="inception", inception_path=path))
    images = np.random.default_rng(2).uniform(-1, 1, (7, 40, 40, 3)).astype(np.float32)
    logits, features = clf.activations(iter([images[:3], images[3:]]), batch_size=2)
    direct = module(tf.image.resize(images, [299, 299], method="bilinear"))
    np.testing.assert_allclose(features, direct["pool_3"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logits, direct["logits"], rtol=1e-5, atol=1e-5)


def test_inception_signature_only_module(stand_in, tmp_path):
    """TF1-style exports have no __call__, only a 'default' signature taking keywords."""
    module = stand_in[1]
    holder = tf.Module()
    holder.forward, holder.params = module.__call__, [module.w, module.b, module.head]
    tf.saved_model.save(holder, str(tmp_path), signatures={"default": module.__call__})
    images = np.random.default_rng(4).uniform(-1, 1, (3, 299, 299, 3)).astype(np.float32)
    clf = inception.load(str(tmp_path))
    assert not callable(clf.module)
    np.testing.assert_allclose(clf.activations(images)[1], module(images)["pool_3"],
                               rtol=1e-6, atol=1e-6)


def test_version_changes_with_the_weights(stand_in, tmp_path):
    other = StandInInception()
    other.b.assign_add(tf.ones_like(other.b))
    tf.saved_model.save(other, str(tmp_path))
    assert inception.load(str(tmp_path)).version != inception.load(stand_in[0]).version


def test_inception_path_from_environment(stand_in, monkeypatch):
    monkeypatch.setenv(inception.ENV_VAR, stand_in[0])
    assert inception.load().path == os.path.realpath(stand_in[0])


def test_inception_from_tfhub_cache_needs_no_network(stand_in, tmp_path, monkeypatch):
    """A handle already in TF-Hub's cache resolves locally, without probing the network."""
    monkeypatch.setenv("TFHUB_CACHE_DIR", str(tmp_path))
    url = inception.handle_url(inception.DEFAULT_HANDLE)
    cached = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    os.symlink(stand_in[0], cached)
    monkeypatch.setattr(inception, "_reachable", lambda *a: pytest.fail("probed the network"))
    assert inception.resolve(inception.DEFAULT_HANDLE) == str(cached)


def test_missing_local_inception_fails_at_once_with_advice(tmp_path):
    t0 = time.perf_counter()
    with pytest.raises(inception.InceptionUnavailable) as err:
        classifiers.load_classifier(EvalConfig(classifier="inception",
                                               inception_path=str(tmp_path / "nope")))
    assert time.perf_counter() - t0 < 1.0
    assert str(tmp_path / "nope") in str(err.value) and "inception_path" in str(err.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/tfgan/inception/1",  # refused at once
                                 "http://192.0.2.1/tfgan/inception/1"])  # TEST-NET: no answer
def test_unreachable_handle_fails_fast_with_advice(url, tmp_path, monkeypatch):
    monkeypatch.setenv("TFHUB_CACHE_DIR", str(tmp_path))
    t0 = time.perf_counter()
    with pytest.raises(inception.InceptionUnavailable) as err:
        inception.resolve(url, probe_timeout=1.0)
    assert time.perf_counter() - t0 < 3.0
    message = str(err.value)
    assert url in message and "unreachable" in message and inception.ENV_VAR in message
