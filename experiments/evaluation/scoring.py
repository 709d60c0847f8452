"""Score generated images against real features, and label every score with its protocol.

A score without its protocol is not comparable with anything (see `records.Protocol`), so
`protocol_record` is stored beside every score.
"""
from __future__ import annotations

import importlib.metadata
import time

import numpy as np

from experiments.evaluation import conditional, fidelity_diversity, metrics
from experiments.evaluation.classifiers.base import iterate_batches
from experiments.records import Protocol


def take_images(images, count: int, batch_size: int):
    """Batches of exactly the first `count` images (a sampler may overshoot its last batch)."""
    seen = 0
    for batch in iterate_batches(images, batch_size):
        if seen >= count:
            return
        batch = batch[:count - seen]
        seen += int(batch.shape[0])
        yield batch


def classify(fake_images, classifier, eval_cfg) -> tuple[np.ndarray, np.ndarray]:
    """(logits, features) of exactly `eval_cfg.num_fake` generated images."""
    logits, features = classifier.activations(
        take_images(fake_images, eval_cfg.num_fake, eval_cfg.batch_size),
        batch_size=eval_cfg.batch_size)
    if len(logits) != eval_cfg.num_fake:
        raise ValueError(f"got {len(logits)} generated images, the protocol needs "
                         f"num_fake={eval_cfg.num_fake}")
    return logits, features


def score_activations(logits, features, real_features, eval_cfg) -> dict:
    """IS (splits), FID and KID of generated activations vs `real_features`."""
    real_features = np.asarray(real_features, np.float64)
    is_mean, is_std = metrics.inception_score(logits, splits=eval_cfg.is_splits)
    fid = metrics.frechet_distance(real_features, features)
    kid_mean, kid_std = metrics.kernel_distance(real_features, features,
                                                subsets=eval_cfg.kid_subsets, seed=eval_cfg.seed)
    return dict(is_mean=is_mean, is_std=is_std, fid=fid, kid_mean=kid_mean, kid_std=kid_std,
                n_fake=len(logits), n_real=len(real_features))


def score_images(fake_images, classifier, real_features, eval_cfg) -> dict:
    """IS (splits), FID and KID of `eval_cfg.num_fake` generated images vs `real_features`.

    `fake_images`: an array or an iterable of batches, NHWC float32 in [-1, 1]; streamed
    through the classifier in batches of `eval_cfg.batch_size`.
    """
    t0 = time.perf_counter()
    logits, features = classify(fake_images, classifier, eval_cfg)
    t_classify = time.perf_counter() - t0
    scores = score_activations(logits, features, real_features, eval_cfg)
    return dict(scores, classify_time_s=round(t_classify, 3),
                metrics_time_s=round(time.perf_counter() - t0 - t_classify, 3))


def recognisability(logits, features, labels, reference, manifold, classifier,
                    dataset: str, num_classes: int) -> dict:
    """Conditional accuracy (where the classifier's logits name the dataset's classes),
    intra-FID (class-conditional models), precision/recall and density/coverage."""
    out = dict(manifold.fidelity_diversity(features))
    if num_classes and dataset in classifier.label_datasets:
        offset = classifier.label_offset
        out.update(conditional.conditional_accuracy(
            np.asarray(logits)[:, offset:offset + num_classes], labels, num_classes))
    if num_classes:
        out.update(conditional.intra_fid(features, labels, reference.features,
                                         reference.labels, num_classes))
    return out


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def protocol_record(eval_cfg, classifier, n_fake: int, n_real: int, **facts) -> Protocol:
    """Everything a reader needs to compare a score: counts, split, classifier, modes, seed.

    `facts` adds run facts (replicas, step, eval_wall_time_s, dataset, resolution).
    """
    return Protocol(
        protocol=eval_cfg.protocol,
        classifier=classifier.name,
        classifier_version=classifier.version,
        classifier_resize=classifier.resize_method,
        classifier_features=classifier.feature_layer,
        n_real=int(n_real), n_fake=int(n_fake),
        reference_split=eval_cfg.reference_split,
        is_splits=eval_cfg.is_splits,
        kid_subsets=eval_cfg.kid_subsets,
        bn_mode=eval_cfg.bn_mode,
        standing_batches=eval_cfg.standing_batches if eval_cfg.bn_mode == "standing" else None,
        seed=eval_cfg.seed,
        eval_batch_size=eval_cfg.batch_size,
        metric_implementation=f"tensorflow-gan {_version('tensorflow-gan')} (float64)",
        knn_dtype=f"{np.dtype(fidelity_diversity.DISTANCE_DTYPE).name}, centred on the real mean",
        **facts,
    )


__all__ = ["classify", "protocol_record", "recognisability", "score_activations",
           "score_images", "take_images"]
