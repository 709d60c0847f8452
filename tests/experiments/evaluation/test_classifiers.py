"""Scoring classifiers: the shipped Fashion-MNIST CNN on real data, and the Inception loader
run offline against a tiny SavedModel with Inception's signature."""
import hashlib
import json
import os
import time

import numpy as np
import pytest
import tensorflow as tf

from experiments.config import EvalConfig
from experiments.data import fashion_mnist_images
from experiments.evaluation import classifiers, metrics
from experiments.evaluation.classifiers import fashion_mnist, inception


# -- shipped Fashion-MNIST classifier -------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    return classifiers.load_classifier(EvalConfig())


@pytest.fixture(scope="module")
def test_split():
    return fashion_mnist_images("test")


def test_shipped_weights_match_their_record(shipped):
    record = json.loads(fashion_mnist.record_path(fashion_mnist.WEIGHTS_PATH).read_text())
    digest = hashlib.sha256(fashion_mnist.WEIGHTS_PATH.read_bytes()).hexdigest()
    assert shipped.version == digest == record["sha256"]
    assert record["test_accuracy"] >= 0.92
    assert os.path.getsize(fashion_mnist.WEIGHTS_PATH) < 4 * 2 ** 20
    assert (shipped.name, shipped.feature_dim, shipped.num_classes) == (
        "fashion_mnist_classifier", 128, 10)


def test_shipped_classifier_on_real_images(shipped, test_split):
    """2k test images: accurate, high IS; FID(train, test) far below FID(noise, test)."""
    images, labels = test_split
    logits, features = shipped.activations(images[:2000])
    assert logits.dtype == features.dtype == np.float64
    assert np.all(features.std(axis=0) > 1e-3)  # no dead feature dimension (pre-ReLU features)
    assert np.mean(np.argmax(logits, 1) == labels[:2000]) > 0.9
    is_mean, _ = metrics.inception_score(logits, splits=2)
    assert is_mean > 8.0  # at most 10 classes; real test images are confidently diverse
    train_images, _ = fashion_mnist_images("train")
    _, train_features = shipped.activations(train_images[:2000])
    noise = np.random.default_rng(0).uniform(-1, 1, size=(2000, 32, 32, 1)).astype(np.float32)
    _, noise_features = shipped.activations(noise)
    fid_real = metrics.frechet_distance(train_features, features)
    fid_noise = metrics.frechet_distance(noise_features, features)
    assert fid_real * 20 < fid_noise, (fid_real, fid_noise)


@pytest.mark.slow
def test_shipped_classifier_full_test_split(shipped, test_split):
    """The numbers docs/evaluation.md quotes: test accuracy as recorded, IS of the test split,
    FID 10k vs 10k."""
    images, labels = test_split
    logits, features = shipped.activations(images)
    accuracy = np.mean(np.argmax(logits, 1) == labels)
    assert accuracy == pytest.approx(shipped.record["test_accuracy"], abs=1e-4)
    is_mean, is_std = metrics.inception_score(logits, splits=10)
    train_images, _ = fashion_mnist_images("train")
    _, train_features = shipped.activations(train_images[:10_000])
    noise = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 32, 32, 1)).astype(np.float32)
    fid_train = metrics.frechet_distance(train_features, features)
    fid_noise = metrics.frechet_distance(shipped.activations(noise)[1], features)
    print(f"\nshipped classifier: accuracy {accuracy:.4f}, test IS {is_mean:.3f} +- "
          f"{is_std:.3f}, FID(train 10k, test) {fid_train:.3f}, FID(noise, test) {fid_noise:.1f}")
    assert is_mean > 8.5 and fid_train * 50 < fid_noise


def test_streamed_batches_give_the_same_activations(shipped, test_split):
    images = test_split[0][:300]
    whole = shipped.activations(images, batch_size=300)
    streamed = shipped.activations((images[i:i + 70] for i in range(0, 300, 70)),
                                   batch_size=32)
    pairs = shipped.activations([(tf.constant(images[:150]), None),
                                 (tf.constant(images[150:]), None)])
    for got in (streamed, pairs):
        np.testing.assert_allclose(got[0], whole[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1], whole[1], rtol=1e-5, atol=1e-5)


def test_one_forward_pass_gives_logits_and_features(shipped, test_split):
    """The traced function runs the network once (it ran it once per output, doubling the
    classification time of every evaluation), and returns the model's two outputs."""
    graph = shipped._fn.get_concrete_function().graph
    convs = [op for op in graph.get_operations() if op.type == "Conv2D"]
    assert len(convs) == len(fashion_mnist.CHANNELS) == 3
    images = test_split[0][:64]
    logits, features = shipped.activations(images, batch_size=64)
    direct = shipped.model(images, training=False)
    # graph vs eager: the same ops, though grappler may fuse some of them
    np.testing.assert_allclose(logits, direct["logits"].numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(features, direct["features"].numpy(), rtol=1e-5, atol=1e-5)


def test_classifier_rejects_wrong_range_and_shape(shipped):
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        shipped.activations(np.full((2, 32, 32, 1), 255.0, np.float32))
    with pytest.raises(ValueError, match="shape"):
        shipped.activations(np.zeros((2, 28, 28, 1), np.float32))


def test_weights_file_is_byte_reproducible_and_round_trips(tmp_path):
    """No timestamps inside the zip: the same weights give the same bytes (and sha256)."""
    tf.keras.utils.set_random_seed(3)
    model = fashion_mnist.build_model()
    first = fashion_mnist.save_weights(model, tmp_path / "a.npz")
    assert fashion_mnist.save_weights(model, tmp_path / "b.npz") == first
    other = fashion_mnist.build_model()
    fashion_mnist.load_weights(other, tmp_path / "a.npz")
    x = np.random.default_rng(1).uniform(-1, 1, (4, 32, 32, 1)).astype(np.float32)
    np.testing.assert_array_equal(other(x)["logits"], model(x)["logits"])


def test_load_refuses_weights_that_do_not_match_their_record(tmp_path):
    model = fashion_mnist.build_model()
    path = tmp_path / "clf.npz"
    fashion_mnist.save_weights(model, path)
    fashion_mnist.record_path(path).write_text(json.dumps({"sha256": "0" * 64}))
    with pytest.raises(ValueError, match="without their record"):
        fashion_mnist.load(path)
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files if not k.startswith("logits")}
    np.savez(path, **arrays)
    fashion_mnist.record_path(path).unlink()
    with pytest.raises(ValueError, match="missing"):
        fashion_mnist.load(path)


# -- Inception, offline, with a stand-in SavedModel --------------------------------------------
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


def test_unknown_classifier_is_refused():
    class Cfg:
        classifier = "vgg"
    with pytest.raises(ValueError, match="unknown classifier"):
        classifiers.load_classifier(Cfg())
