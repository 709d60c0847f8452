"""The second extractor (a pre-activation ResNet) on real data: weights that match their
record, another network than the first, FID 0 between identical sets and growing with planted
corruptions, test accuracy as recorded, byte-reproducible weights and training, and loading
that refuses weights changed without their record."""
import hashlib
import json
import os

import numpy as np
import pytest
import scipy.ndimage
import tensorflow as tf

from experiments.config import ConfigError, DataConfig, EvalConfig
from experiments.configs import preset
from experiments.data import fashion_mnist_images
from experiments.evaluation import classifiers, metrics, reference_stats
from experiments.evaluation.classifiers import fashion_mnist, fashion_mnist_resnet


@pytest.fixture(scope="module")
def resnet():
    return classifiers.load_classifier(EvalConfig(classifier="fashion_mnist_resnet"))


@pytest.fixture(scope="module")
def clean_and_features(resnet, test_split):
    images = test_split[0][:2000]
    return images, resnet.activations(images)[1]


def test_shipped_resnet_matches_its_record(resnet):
    path = fashion_mnist_resnet.WEIGHTS_PATH
    record = json.loads(fashion_mnist_resnet.record_path(path).read_text())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert resnet.version == digest == record["sha256"]
    assert record["name"] == resnet.name == "fashion_mnist_resnet"
    assert record["test_accuracy"] >= 0.9
    assert record["command"].startswith(fashion_mnist_resnet.TRAIN_COMMAND)
    assert os.path.getsize(path) < 4 * 2 ** 20
    assert (resnet.feature_dim, resnet.num_classes) == (128, 10)


def test_it_is_another_network_than_the_first(resnet, shipped):
    """Residual blocks, no max pooling, no weight shared by name or shape with the first."""
    layer_types = {type(layer).__name__ for layer in resnet.model.layers}
    assert {"Add", "GlobalAveragePooling2D"} <= layer_types
    assert "MaxPooling2D" not in layer_types and "Flatten" not in layer_types
    adds = sum(type(layer).__name__ == "Add" for layer in resnet.model.layers)
    assert adds == len(fashion_mnist_resnet.WIDTHS) * fashion_mnist_resnet.BLOCKS_PER_STAGE
    first = {(v.path, tuple(v.shape)) for v in shipped.model.weights}
    second = {(v.path, tuple(v.shape)) for v in resnet.model.weights}
    assert not (first & second - {("logits/kernel", (128, 10)), ("logits/bias", (10,)),
                                  ("dense_features/bias", (128,))})
    assert resnet.version != shipped.version
    assert resnet.feature_layer != shipped.feature_layer


def test_fid_of_identical_sets_is_zero(clean_and_features):
    _, features = clean_and_features
    assert np.all(features.std(axis=0) > 1e-3)  # no dead feature dimension
    fid = metrics.frechet_distance(features, features)
    assert abs(fid) < 1e-6 * np.trace(np.cov(features, rowvar=False)), fid


def _noisy(images, sigma):
    noise = np.random.default_rng(0).normal(size=images.shape).astype(np.float32)
    return np.clip(images + sigma * noise, -1.0, 1.0)


def _blurred(images, sigma):
    return scipy.ndimage.gaussian_filter(images, sigma=(0, sigma, sigma, 0)).astype(np.float32)


@pytest.mark.parametrize("corrupt, strengths", [(_noisy, (0.0, 0.1, 0.25, 0.5, 1.0)),
                                                (_blurred, (0.0, 0.5, 1.0, 2.0))],
                         ids=["gaussian_noise", "gaussian_blur"])
def test_fid_grows_with_a_planted_corruption(resnet, clean_and_features, corrupt, strengths):
    """FID(clean, corrupted copy of the same 2,000 test images): 0 at strength 0, then
    strictly increasing; the strongest corruption is far above two disjoint real sets."""
    images, features = clean_and_features
    fids = [metrics.frechet_distance(features, resnet.activations(corrupt(images, s))[1])
            for s in strengths]
    print(f"\n{corrupt.__name__} {strengths}: FID {np.round(fids, 2).tolist()}")
    assert fids[0] == pytest.approx(0.0, abs=1e-6 * np.trace(np.cov(features, rowvar=False)))
    assert all(a < b for a, b in zip(fids, fids[1:])), fids
    train_features = resnet.activations(fashion_mnist_images("train")[0][:2000])[1]
    floor = metrics.frechet_distance(train_features, features)
    assert fids[-1] > 10 * floor, (fids, floor)


@pytest.mark.slow
def test_recorded_accuracy_and_real_against_real_fid(resnet, test_split):
    """The numbers docs/evaluation.md quotes: the recorded test accuracy recomputed on the
    whole test split; IS of the test split; FID of train images against the test split
    (10k vs 10k as for the first classifier, and the fast protocol's 5k vs 10k)."""
    images, labels = test_split
    logits, features = resnet.activations(images)
    accuracy = np.mean(np.argmax(logits, 1) == labels)
    assert accuracy == pytest.approx(resnet.record["test_accuracy"], abs=1e-4)
    is_mean, is_std = metrics.inception_score(logits, splits=10)
    _, train_features = resnet.activations(fashion_mnist_images("train")[0][:10_000])
    fid_10k = metrics.frechet_distance(train_features, features)
    fid_5k = metrics.frechet_distance(train_features[:5_000], features)
    noise = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 32, 32, 1)).astype(np.float32)
    fid_noise = metrics.frechet_distance(resnet.activations(noise)[1], features)
    print(f"\n{resnet.name}: accuracy {accuracy:.4f}, test IS {is_mean:.3f} +- {is_std:.3f}, "
          f"FID(train 10k, test 10k) {fid_10k:.3f}, FID(train 5k, test 10k) {fid_5k:.3f}, "
          f"FID(noise, test) {fid_noise:.1f}")
    assert is_mean > 8.0 and fid_10k * 50 < fid_noise


def test_config_and_reference_stats_accept_it(resnet, shipped, tmp_path):
    """eval.classifier='fashion_mnist_resnet' is a valid protocol for Fashion-MNIST only, and
    its cached real features live in their own file, keyed by its name and hash."""
    assert preset("fashion_mnist", {"eval.classifier": "fashion_mnist_resnet"})
    with pytest.raises(ConfigError, match="'fashion_mnist_resnet' only scores fashion_mnist"):
        preset("cifar10", {"eval.classifier": "fashion_mnist_resnet"})
    eval_cfg = EvalConfig(classifier="fashion_mnist_resnet", protocol="custom", num_real=500,
                          num_fake=100, batch_size=250)
    stats = reference_stats.reference_statistics(DataConfig(), eval_cfg, resnet, tmp_path)
    assert stats.features.shape == (500, 128)
    assert (stats.key["classifier"], stats.key["classifier_version"]) == (resnet.name,
                                                                          resnet.version)
    first = reference_stats.cache_path(tmp_path, reference_stats.cache_key(
        DataConfig(), eval_cfg, shipped))
    assert "fashion-mnist-resnet" in os.path.basename(stats.path)  # the name, slugified
    assert str(first) != stats.path


def test_weights_file_is_byte_reproducible_and_round_trips(tmp_path):
    tf.keras.utils.set_random_seed(3)
    model = fashion_mnist_resnet.build_model()
    first = fashion_mnist.save_weights(model, tmp_path / "a.npz")
    assert fashion_mnist.save_weights(model, tmp_path / "b.npz") == first
    other = fashion_mnist_resnet.build_model()
    fashion_mnist.load_weights(other, tmp_path / "a.npz")
    x = np.random.default_rng(1).uniform(-1, 1, (4, 32, 32, 1)).astype(np.float32)
    np.testing.assert_array_equal(other(x)["features"], model(x)["features"])


def test_load_refuses_a_wrong_sha256_and_missing_weights(tmp_path):
    path = tmp_path / "resnet.npz"
    fashion_mnist.save_weights(fashion_mnist_resnet.build_model(), path)
    fashion_mnist_resnet.record_path(path).write_text(json.dumps({"sha256": "0" * 64}))
    with pytest.raises(ValueError, match="changed without their record.*train-classifier "
                                         "--classifier fashion_mnist_resnet"):
        fashion_mnist_resnet.load(path)
    with pytest.raises(ValueError, match="does not fit"):  # the first's weights: another net
        fashion_mnist_resnet.load(fashion_mnist.WEIGHTS_PATH)
    with pytest.raises(ValueError, match="not found.*--classifier fashion_mnist_resnet"):
        fashion_mnist_resnet.load(tmp_path / "absent.npz")


@pytest.mark.long
def test_training_is_byte_reproducible(tmp_path):
    """Same seed, same data: the same weights bytes (op determinism, seeded shuffling);
    another seed gives other weights. One epoch on 512 training images."""
    runs = [fashion_mnist_resnet.train_classifier(tmp_path / f"{name}.npz", epochs=1, seed=seed,
                                                  limit=512)
            for name, seed in (("a", 1), ("b", 1), ("c", 2))]
    assert runs[0]["sha256"] == runs[1]["sha256"] != runs[2]["sha256"]
    assert runs[0]["command"].endswith("--epochs 1 --seed 1 (first 512 training images)")
    assert fashion_mnist_resnet.load(tmp_path / "a.npz").version == runs[0]["sha256"]
