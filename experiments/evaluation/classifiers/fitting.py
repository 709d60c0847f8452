"""The one compile-and-fit of a classifier's logits, shared by the shipped scorers and CAS.

The Fashion-MNIST CNN (fashion_mnist.py), the ResNet (fashion_mnist_resnet.py) and the CAS
recipe's classifier (cas.py) train alike: a Keras model over the network's `logits` output, the
learning rate decayed to 0 by a cosine over every step, sparse softmax cross-entropy from
logits, Keras's shuffling; only the optimiser differs. The caller seeds Keras (and turns on op
determinism) before building the network, so the shipped weights stay byte-reproducible.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    """What a fit leaves: the trained logits model (its weights are the network's), the last
    epoch's training accuracy and the seconds `fit` took."""
    logits_model: object  # keras.Model
    train_accuracy_last_epoch: float
    train_time_s: float


def fit_logits(model, x_train, y_train, *, optimizer_for: Callable, learning_rate: float,
               epochs: int, batch_size: int, verbose: int = 0) -> Fit:
    """Train `model` (outputs {'logits', ...}) on (x_train, y_train) for `epochs`;
    `optimizer_for(schedule)` makes the optimiser from the cosine learning-rate schedule."""
    import keras

    trainable = keras.Model(model.input, model.output["logits"])
    steps = epochs * int(np.ceil(len(x_train) / batch_size))
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, decay_steps=steps)
    trainable.compile(optimizer=optimizer_for(schedule),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    t0 = time.perf_counter()
    history = trainable.fit(x_train, y_train, batch_size=batch_size, epochs=epochs,
                            shuffle=True, verbose=verbose)
    train_time = time.perf_counter() - t0
    return Fit(trainable, float(history.history["accuracy"][-1]), train_time)
