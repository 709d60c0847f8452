"""The embedded default scorer: a small CNN trained on Fashion-MNIST, shipped as plain `.npz`.

Inception features mean little on 32x32 grey clothing, so (as TF-GAN does for MNIST) we score
with a classifier of the data's own domain: the Inception Score comes from its logits, FID and
KID from its penultimate features. Its weights are committed, so every machine computes
identical scores; `train_classifier` reproduces them (`python -m experiments
train-classifier`). Weights are stored as arrays keyed by variable path in an `.npz` written
with fixed zip timestamps (byte-reproducible, loaded with `allow_pickle=False`), next to a JSON
record of their SHA-256, test accuracy and the command that made them.

Input: 32x32x1 images in [-1, 1], padded from 28x28 exactly like the GAN's training data.
"""
from __future__ import annotations

import json
import logging
import os
import platform
from pathlib import Path

import numpy as np
import tensorflow as tf

from common import files
from common.errors import WeightsError
from common.files import file_sha256
from experiments.evaluation.classifiers.base import run_in_batches
from experiments.evaluation.classifiers.fitting import fit_logits

log = logging.getLogger(__name__)

NAME = "fashion_mnist_classifier"
ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets"
WEIGHTS_PATH = ASSETS_DIR / "fashion_mnist_classifier.npz"
IMAGE_SHAPE = (32, 32, 1)
NUM_CLASSES = 10
FEATURE_DIM = 128
FEATURE_LAYER = "dense_features (128 units, before ReLU)"
CHANNELS = (32, 64, 128)
TRAIN_COMMAND = "python -m experiments train-classifier"
DEFAULT_EPOCHS = 12  # 93.1% test accuracy


def record_path(weights_path: str | os.PathLike) -> Path:
    return Path(weights_path).with_suffix(".json")


def build_model(channels: tuple[int, ...] = CHANNELS, bn_momentum: float = 0.99):
    """CNN: 3 x (conv3x3-BN-ReLU-maxpool), dense 128 (the features), dense 10 (the logits).

    Outputs {"logits", "features"}; `features` are the penultimate layer's 128 units *before*
    their ReLU (the analogue of Inception's pool_3): after the ReLU, 87 of the 128 units of the
    shipped weights are zero on every test image (dead units), which would leave FID/KID only
    41 dimensions; before it all 128 vary. Layer names are fixed: they key the weights file.
    """
    import keras
    from keras import layers

    images = keras.Input(IMAGE_SHAPE, name="images")
    x = images
    for i, ch in enumerate(channels):
        x = layers.Conv2D(ch, 3, padding="same", use_bias=False, name=f"conv{i}")(x)
        x = layers.BatchNormalization(momentum=bn_momentum, name=f"bn{i}")(x)
        x = layers.ReLU(name=f"relu{i}")(x)
        x = layers.MaxPooling2D(name=f"pool{i}")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dropout(0.3, name="dropout0")(x)
    features = layers.Dense(FEATURE_DIM, name="dense_features")(x)
    x = layers.ReLU(name="relu3")(features)
    x = layers.Dropout(0.3, name="dropout1")(x)
    logits = layers.Dense(NUM_CLASSES, name="logits")(x)
    return keras.Model(images, {"logits": logits, "features": features}, name=NAME)


# -- weights file: no pickle, byte-reproducible ------------------------------------------------
def _weight_arrays(model) -> dict[str, np.ndarray]:
    arrays = {v.path: np.asarray(v.numpy()) for v in model.weights}
    if len(arrays) != len(model.weights):
        raise RuntimeError("duplicate variable paths in the classifier; cannot key weights")
    return arrays


def save_weights(model, path: str | os.PathLike) -> str:
    """Write the model's variables to a reproducible .npz; return its sha256."""
    return files.write_npz(path, _weight_arrays(model))


def load_weights(model, path: str | os.PathLike) -> None:
    """Assign every variable from the .npz; refuse missing, extra or misshapen arrays."""
    files.load_npz_into({v.path: v for v in model.weights}, path, "classifier")


# -- the scorer --------------------------------------------------------------------------------
class FashionMNISTClassifier:
    """`Classifier` over the shipped CNN; images must already be 32x32x1 (the GAN's format)."""

    name = NAME
    resize_method = "none (28x28 padded to 32x32 with -1, as the training data)"
    feature_layer = FEATURE_LAYER
    feature_dim = FEATURE_DIM
    num_classes = NUM_CLASSES
    label_datasets = ("fashion_mnist",)
    label_offset = 0

    def __init__(self, model, version: str, record: dict | None = None):
        self.model = model
        self.version = version
        self.record = record or {}
        self._fn = tf.function(self._logits_and_features,
                               input_signature=[tf.TensorSpec([None, *IMAGE_SHAPE], tf.float32)])

    def _logits_and_features(self, images):
        out = self.model(images, training=False)  # one forward pass gives both outputs
        return out["logits"], out["features"]

    def activations(self, images, batch_size: int = 500):
        return run_in_batches(self._fn, images, batch_size, IMAGE_SHAPE, self.name)


def checked_weights(weights_path: Path, what: str, train_command: str) -> tuple[str, dict]:
    """(SHA-256, record) of shipped weights, refused when missing or changed without their
    record; `what` names them in the errors, `train_command` recreates them."""
    rec_path = record_path(weights_path)
    if not weights_path.exists():
        raise WeightsError(
            f"{what} weights not found at {weights_path}; they ship with the repository "
            f"(experiments/assets/). Recreate them with `{train_command}`.")
    digest = file_sha256(weights_path)
    record = json.loads(rec_path.read_text()) if rec_path.exists() else {}
    if record and record.get("sha256") != digest:
        raise WeightsError(
            f"{weights_path} has sha256 {digest} but {rec_path} records "
            f"{record.get('sha256')}: the weights were changed without their record. Restore "
            f"them from git or retrain with `{train_command}`.")
    return digest, record


def load(weights_path: str | os.PathLike | None = None) -> FashionMNISTClassifier:
    """The shipped classifier, checked against the SHA-256 in its JSON record."""
    weights_path = Path(weights_path or WEIGHTS_PATH)
    digest, record = checked_weights(weights_path, "classifier", TRAIN_COMMAND)
    model = build_model()
    load_weights(model, weights_path)
    return FashionMNISTClassifier(model, digest, record)


# -- training (reproduces the shipped weights) -------------------------------------------------
def _split(split: str, data_dir: str | None):
    """(images [N,32,32,1] float32 in [-1,1], labels int) exactly as the GAN sees them."""
    from experiments import data

    return data.fashion_mnist_images(split, resolution=32, method="pad", data_dir=data_dir)


def train_classifier(output_path: str | os.PathLike | None = None, epochs: int | None = None,
                     seed: int = 0, batch_size: int = 128, learning_rate: float = 2e-3,
                     data_dir: str | None = None) -> dict:
    """Train on the train split, report test accuracy, write weights + JSON record.

    Seeded initialisation and shuffling with op determinism on: two runs on the same machine
    gave bit-identical weights (another CPU or TF version may differ in the last bits, which
    is why the weights are committed). Fixed epoch count: the test split never selects.
    """
    import keras

    output_path = Path(output_path or WEIGHTS_PATH)
    epochs = epochs or DEFAULT_EPOCHS
    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()
    x_train, y_train = _split("train", data_dir)
    x_test, y_test = _split("test", data_dir)

    model = build_model()
    fit = fit_logits(model, x_train, y_train, optimizer_for=keras.optimizers.Adam,
                     learning_rate=learning_rate, epochs=epochs, batch_size=batch_size,
                     verbose=2)
    train_time = fit.train_time_s
    logits, _ = FashionMNISTClassifier(model, "unsaved").activations(x_test)
    test_accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    digest = save_weights(model, output_path)
    record = dict(
        name=NAME, sha256=digest, test_accuracy=round(test_accuracy, 6),
        train_accuracy_last_epoch=round(fit.train_accuracy_last_epoch, 6),
        epochs=epochs, seed=seed, batch_size=batch_size, learning_rate=learning_rate,
        optimizer="adam, cosine decay to 0", parameters=int(model.count_params()),
        feature_dim=FEATURE_DIM, features=FEATURE_LAYER,
        input="32x32x1 in [-1, 1], 28x28 padded by 2 with -1",
        train_time_s=round(train_time, 1),
        command=f"{TRAIN_COMMAND} --epochs {epochs} --seed {seed}",
        tensorflow=tf.__version__, keras=keras.__version__, python=platform.python_version())
    files.atomic_write_json(record_path(output_path), record)
    log.info(f"classifier: test accuracy {test_accuracy:.4f}, sha256 {digest[:16]}..., "
             f"{train_time:.0f} s, written to {output_path}")
    return record
