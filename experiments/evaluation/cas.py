"""Classification Accuracy Score (Ravuri & Vinyals, NeurIPS 2019, arXiv 1905.10887).

Train a classifier only on a class-conditional generator's samples, test it on real images:
a class the generator fails (wrong class, one mode, unrecognisable) costs that class's test
accuracy, which IS and FID average away. The classifier follows a fixed recipe
(`records.CasRecipe`: the shipped Fashion-MNIST classifier's architecture, fresh weights, Adam
with cosine decay, no augmentation, a seed); the same recipe trained on as many real training
images is the ceiling (`real_ceiling`). Scores are `records.CasScore`, cached in a point's
`PointRecord.cas` under `CasRecipe.key`.
"""
from __future__ import annotations

import time

import numpy as np

from experiments.evaluation.conditional import conditional_accuracy
from experiments.records import CasRecipe, CasScore

IMAGE_SHAPE = (32, 32, 1)  # the recipe's architecture (Fashion-MNIST at 32x32)
NUM_CLASSES = 10
RECIPE = CasRecipe()  # the recipe the study reports
# The one architecture implemented (RECIPE.architecture): the shipped classifier's layers at
# half its width, which trains 2-3x faster here (a CAS costs under a minute on 2 cores).
CHANNELS = (16, 32, 64)


class CasError(ValueError):
    """A CAS that cannot be computed as asked (data of another shape, too few classes)."""


def check_images(images, labels, what: str, num_classes: int = NUM_CLASSES):
    images = np.asarray(images, np.float32)
    labels = np.asarray(labels).astype(np.int64)
    if images.ndim != 4 or tuple(images.shape[1:]) != IMAGE_SHAPE:
        raise CasError(f"CAS {what}: the recipe's classifier takes images of shape "
                       f"[N, {', '.join(map(str, IMAGE_SHAPE))}], got {images.shape}")
    if len(images) != len(labels) or len(labels) == 0:
        raise CasError(f"CAS {what}: {len(images)} images and {len(labels)} labels")
    if labels.min() < 0 or labels.max() >= num_classes:
        raise CasError(f"CAS {what}: labels must lie in [0, {num_classes})")
    return images, labels


def first_per_class(labels, per_class: int, num_classes: int = NUM_CLASSES) -> np.ndarray:
    """Indices of the first `per_class` examples of every class, in stored order."""
    labels = np.asarray(labels)
    picked = []
    for c in range(num_classes):
        where = np.flatnonzero(labels == c)[:per_class]
        if len(where) < per_class:
            raise CasError(f"CAS: class {c} has {len(where)} images, the recipe needs "
                           f"{per_class}")
        picked.append(where)
    return np.sort(np.concatenate(picked))


def train_and_test(x_train, y_train, x_test, y_test, recipe: CasRecipe,
                   num_classes: int = NUM_CLASSES) -> dict:
    """Train the recipe's classifier on (x_train, y_train), score it on (x_test, y_test).

    Seeded (keras.utils.set_random_seed: initialisation, dropout, shuffling); on one machine
    and thread count two runs gave the same accuracy (tests/experiments/evaluation/test_cas.py).
    """
    import keras

    from experiments.evaluation.classifiers import fashion_mnist
    from experiments.evaluation.classifiers.fitting import fit_logits

    if recipe.architecture != RECIPE.architecture:
        raise CasError(f"CAS: only the architecture {RECIPE.architecture!r} is implemented")
    x_train, y_train = check_images(x_train, y_train, "training set", num_classes)
    x_test, y_test = check_images(x_test, y_test, "test set", num_classes)
    keras.utils.set_random_seed(recipe.seed)
    model = fashion_mnist.build_model(CHANNELS, recipe.bn_momentum)
    fit = fit_logits(model, x_train, y_train, optimizer_for=keras.optimizers.Adam,
                     learning_rate=recipe.learning_rate, epochs=recipe.epochs,
                     batch_size=recipe.batch_size, verbose=0)
    logits = fit.logits_model.predict(x_test, batch_size=500, verbose=0)
    scores = conditional_accuracy(logits, y_test, num_classes)
    return dict(scores, n_train=len(x_train), n_test=len(x_test),
                train_accuracy_last_epoch=fit.train_accuracy_last_epoch,
                train_time_s=round(fit.train_time_s, 3))


def cas_score(x_train, y_train, x_test, y_test, recipe: CasRecipe, trained_on: str,
              bn_mode: str | None = None, step: int | None = None) -> CasScore:
    t0 = time.perf_counter()
    out = train_and_test(x_train, y_train, x_test, y_test, recipe)
    return CasScore(recipe=recipe, trained_on=trained_on, bn_mode=bn_mode, step=step,
                    wall_time_s=round(time.perf_counter() - t0, 3), **out)


def generated_training_set(sampler, recipe: CasRecipe, bn_mode: str, batch_size: int = 500,
                           standing_batches: int = 10):
    """`recipe.per_class` samples of every class from a class-conditional `sampler`
    (sngan.sampling.Sampler), classes interleaved in every batch as in evaluation."""
    num_classes = int(sampler.num_classes)
    if num_classes != NUM_CLASSES:
        raise CasError(f"CAS needs a class-conditional generator of {NUM_CLASSES} classes; "
                       f"this one has {num_classes}")
    images, labels = [], []
    for x, y in sampler.batches(recipe.per_class * num_classes, seed=recipe.sample_seed,
                                bn_mode=bn_mode, batch_size=batch_size,
                                standing_batches=standing_batches):
        images.append(np.asarray(x, np.float32))
        labels.append(np.asarray(y))
    return np.concatenate(images), np.concatenate(labels)


def score_generator(sampler, real_test, recipe: CasRecipe, bn_mode: str,
                    step: int | None = None, batch_size: int = 500,
                    standing_batches: int = 10) -> CasScore:
    """CAS of a generator: `real_test` is (images, labels) of the recipe's test split."""
    t0 = time.perf_counter()
    x, y = generated_training_set(sampler, recipe, bn_mode, batch_size, standing_batches)
    score = cas_score(x, y, *real_test, recipe, "generated", bn_mode=bn_mode, step=step)
    return score.replace(wall_time_s=round(time.perf_counter() - t0, 3))


def real_ceiling(real_train, real_test, recipe: CasRecipe) -> CasScore:
    """The recipe trained on the first `per_class` real training images of every class."""
    x, y = real_train
    picked = first_per_class(y, recipe.per_class)
    return cas_score(np.asarray(x)[picked], np.asarray(y)[picked], *real_test, recipe, "train")
