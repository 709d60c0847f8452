"""The second, independent scorer: a small pre-activation ResNet trained on Fashion-MNIST.

Every score of the study first came from one network (`fashion_mnist_classifier`, a plain
3-layer CNN). Whether a ranking is a property of the generators or of that network is only
answered by scoring with another one (Stein et al. 2023, arXiv:2306.04675, show rankings move
with the extractor). This one differs in architecture (residual blocks with pre-activation,
He et al. 2016, arXiv:1603.05027; global average pooling instead of flatten; no max pooling,
no dropout), optimiser (SGD with Nesterov momentum and weight decay instead of Adam), seed and
data order, and shares only the training split and the input format.

Shipped like the first: `.npz` weights with fixed zip timestamps (byte-reproducible, loaded
without pickle) and a JSON record of their SHA-256, test accuracy and the command that made
them; loading refuses weights whose SHA-256 differs from the record.

Input: 32x32x1 images in [-1, 1], padded from 28x28 exactly like the GAN's training data.
"""
from __future__ import annotations

import logging
import os
import platform
from pathlib import Path

import numpy as np
import tensorflow as tf

from common import files
from experiments.evaluation.classifiers import fashion_mnist
from experiments.evaluation.classifiers.fashion_mnist import (
    IMAGE_SHAPE,
    NUM_CLASSES,
    load_weights,
    record_path,
    save_weights,
)
from experiments.evaluation.classifiers.fitting import fit_logits

log = logging.getLogger(__name__)

NAME = "fashion_mnist_resnet"
WEIGHTS_PATH = fashion_mnist.ASSETS_DIR / "fashion_mnist_resnet.npz"
WIDTHS = (32, 64, 128)  # one stage per width, at 16x16, 8x8 and 4x4
BLOCKS_PER_STAGE = 1
FEATURE_DIM = 128
FEATURE_LAYER = "dense_features (128 units after global average pooling, before ReLU)"
TRAIN_COMMAND = "python -m experiments train-classifier --classifier fashion_mnist_resnet"
DEFAULT_EPOCHS = 4  # 92.23% test accuracy, 10 min on a 2-core AVX2 CPU
DEFAULT_SEED = 1  # the first classifier's is 0: another initialisation and data order
RECIPE = dict(batch_size=128, learning_rate=0.05, momentum=0.9, weight_decay=5e-4)


def _preact_block(x, width: int, stride: int, name: str):
    """BN-ReLU-conv3x3(stride)-BN-ReLU-conv3x3 plus the shortcut (1x1 conv on the
    pre-activated input where the shape changes), as in He et al. 2016 (v2)."""
    from keras import layers

    pre = layers.ReLU(name=f"{name}_relu1")(layers.BatchNormalization(name=f"{name}_bn1")(x))
    if stride != 1 or x.shape[-1] != width:
        shortcut = layers.Conv2D(width, 1, strides=stride, use_bias=False,
                                 name=f"{name}_shortcut")(pre)
    else:
        shortcut = x
    y = layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False,
                      name=f"{name}_conv1")(pre)
    y = layers.ReLU(name=f"{name}_relu2")(layers.BatchNormalization(name=f"{name}_bn2")(y))
    y = layers.Conv2D(width, 3, padding="same", use_bias=False, name=f"{name}_conv2")(y)
    return layers.Add(name=f"{name}_add")([shortcut, y])


def build_model():
    """Pre-activation ResNet-8: conv3x3 stem with stride 2 (32x32 -> 16x16), 3 stages of one
    residual block (32, 64, 128 channels; stages 2 and 3 halve the resolution), BN-ReLU,
    global average pooling, dense 128 (the features), dense 10 (the logits). The stride-2 stem
    keeps the cost near the first classifier's on a 2-core CPU (no activation map larger than
    16x16x32).

    Outputs {"logits", "features"}; `features` are the 128 dense units *before* their ReLU, as
    for the first classifier (the analogue of Inception's pool_3). Layer names are fixed:
    they key the weights file.
    """
    import keras
    from keras import layers

    images = keras.Input(IMAGE_SHAPE, name="images")
    x = layers.Conv2D(WIDTHS[0], 3, strides=2, padding="same", use_bias=False,
                      name="stem")(images)
    for stage, width in enumerate(WIDTHS):
        for block in range(BLOCKS_PER_STAGE):
            stride = 2 if stage > 0 and block == 0 else 1
            x = _preact_block(x, width, stride, name=f"stage{stage}_block{block}")
    x = layers.ReLU(name="final_relu")(layers.BatchNormalization(name="final_bn")(x))
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    features = layers.Dense(FEATURE_DIM, name="dense_features")(x)
    x = layers.ReLU(name="features_relu")(features)
    logits = layers.Dense(NUM_CLASSES, name="logits")(x)
    return keras.Model(images, {"logits": logits, "features": features}, name=NAME)


class FashionMNISTResNet(fashion_mnist.FashionMNISTClassifier):
    """`Classifier` over the shipped ResNet; images must already be 32x32x1 (the GAN's format).
    The forward pass and batch loop are the first classifier's; only the network differs."""

    name = NAME
    feature_layer = FEATURE_LAYER
    feature_dim = FEATURE_DIM


def load(weights_path: str | os.PathLike | None = None) -> FashionMNISTResNet:
    """The shipped ResNet, checked against the SHA-256 in its JSON record."""
    weights_path = Path(weights_path or WEIGHTS_PATH)
    digest, record = fashion_mnist.checked_weights(weights_path, NAME, TRAIN_COMMAND)
    model = build_model()
    load_weights(model, weights_path)
    return FashionMNISTResNet(model, digest, record)


def train_classifier(output_path: str | os.PathLike | None = None, epochs: int | None = None,
                     seed: int | None = None, data_dir: str | None = None,
                     limit: int | None = None) -> dict:
    """Train on the train split (its first `limit` images, for tests), report test accuracy,
    write weights + JSON record.

    Seeded initialisation and shuffling with op determinism on, so the same machine and
    software versions give the same bytes (another CPU or TF version may differ in the last
    bits, which is why the weights are committed). Fixed epoch count: the test split never
    selects anything.
    """
    import keras

    output_path = Path(output_path or WEIGHTS_PATH)
    epochs = epochs or DEFAULT_EPOCHS
    seed = DEFAULT_SEED if seed is None else seed
    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()
    x_train, y_train = fashion_mnist._split("train", data_dir)
    x_test, y_test = fashion_mnist._split("test", data_dir)
    if limit is not None:
        x_train, y_train = x_train[:limit], y_train[:limit]

    model = build_model()
    batch_size = RECIPE["batch_size"]

    def sgd(schedule):
        return keras.optimizers.SGD(schedule, momentum=RECIPE["momentum"], nesterov=True,
                                    weight_decay=RECIPE["weight_decay"])

    fit = fit_logits(model, x_train, y_train, optimizer_for=sgd,
                     learning_rate=RECIPE["learning_rate"], epochs=epochs,
                     batch_size=batch_size, verbose=2)
    train_time = fit.train_time_s
    logits, _ = FashionMNISTResNet(model, "unsaved").activations(x_test)
    test_accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    digest = save_weights(model, output_path)
    command = f"{TRAIN_COMMAND} --epochs {epochs} --seed {seed}"
    record = dict(
        name=NAME, sha256=digest, test_accuracy=round(test_accuracy, 6),
        train_accuracy_last_epoch=round(fit.train_accuracy_last_epoch, 6),
        architecture=(f"pre-activation ResNet: conv3x3 stride-2 stem, {len(WIDTHS)} stages x "
                      f"{BLOCKS_PER_STAGE} residual block(s), widths {list(WIDTHS)}, global "
                      f"average pooling, dense {FEATURE_DIM}, dense {NUM_CLASSES}"),
        epochs=epochs, seed=seed, batch_size=batch_size,
        learning_rate=RECIPE["learning_rate"],
        optimizer=(f"SGD, Nesterov momentum {RECIPE['momentum']}, decoupled weight decay "
                   f"{RECIPE['weight_decay']}, cosine decay to 0, no augmentation"),
        train_images=len(x_train), parameters=int(model.count_params()),
        feature_dim=FEATURE_DIM, features=FEATURE_LAYER,
        input="32x32x1 in [-1, 1], 28x28 padded by 2 with -1",
        train_time_s=round(train_time, 1),
        command=command if limit is None else f"{command} (first {limit} training images)",
        tensorflow=tf.__version__, keras=keras.__version__, python=platform.python_version())
    files.atomic_write_json(record_path(output_path), record)
    log.info(f"{NAME}: test accuracy {test_accuracy:.4f}, sha256 {digest[:16]}..., "
             f"{train_time:.0f} s, written to {output_path}")
    return record
