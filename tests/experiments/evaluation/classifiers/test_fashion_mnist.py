"""The shipped Fashion-MNIST classifier on real data: weights that match their record, accurate
and confident on real images, one forward pass, byte-reproducible weights files."""
import hashlib
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from experiments.data import fashion_mnist_images
from experiments.evaluation import metrics
from experiments.evaluation.classifiers import fashion_mnist


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
