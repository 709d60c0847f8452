"""Score generated images against real features, and label every score with its protocol.

FID in particular depends on the sample counts, the reference split, the classifier and its
input resizing (10k/5k vs 50k/50k differ by several points for the same model), so a score
without its protocol is not comparable with anything; `protocol_record` is stored beside it.
"""
from __future__ import annotations

import importlib.metadata
import time

import numpy as np

from experiments import metrics
from experiments.classifiers.base import iterate_batches


def take_images(images, count: int, batch_size: int):
    """Batches of exactly the first `count` images (a sampler may overshoot its last batch)."""
    seen = 0
    for batch in iterate_batches(images, batch_size):
        if seen >= count:
            return
        batch = batch[:count - seen]
        seen += int(batch.shape[0])
        yield batch


def score_images(fake_images, classifier, real_features, eval_cfg) -> dict:
    """IS (splits), FID and KID of `eval_cfg.num_fake` generated images vs `real_features`.

    `fake_images`: an array or an iterable of batches, NHWC float32 in [-1, 1]; streamed
    through the classifier in batches of `eval_cfg.batch_size`.
    """
    t0 = time.perf_counter()
    logits, features = classifier.activations(
        take_images(fake_images, eval_cfg.num_fake, eval_cfg.batch_size),
        batch_size=eval_cfg.batch_size)
    if len(logits) != eval_cfg.num_fake:
        raise ValueError(f"got {len(logits)} generated images, the protocol needs "
                         f"num_fake={eval_cfg.num_fake}")
    t_classify = time.perf_counter() - t0
    real_features = np.asarray(real_features, np.float64)
    is_mean, is_std = metrics.inception_score(logits, splits=eval_cfg.is_splits)
    fid = metrics.frechet_distance(real_features, features)
    kid_mean, kid_std = metrics.kernel_distance(real_features, features,
                                                subsets=eval_cfg.kid_subsets, seed=eval_cfg.seed)
    return dict(is_mean=is_mean, is_std=is_std, fid=fid, kid_mean=kid_mean, kid_std=kid_std,
                n_fake=len(logits), n_real=len(real_features),
                classify_time_s=round(t_classify, 3),
                metrics_time_s=round(time.perf_counter() - t0 - t_classify, 3))


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def protocol_record(eval_cfg, classifier, n_fake: int, n_real: int,
                    extra: dict | None = None) -> dict:
    """Everything a reader needs to compare a score: counts, split, classifier, modes, seed.

    `extra` adds or overrides run facts (replicas, step, wall time, dataset, resolution).
    """
    record = dict(
        protocol=eval_cfg.protocol,
        classifier=classifier.name,
        classifier_version=classifier.version,
        classifier_resize=classifier.resize_method,
        classifier_features=getattr(classifier, "feature_layer", None),
        n_real=int(n_real), n_fake=int(n_fake),
        reference_split=eval_cfg.reference_split,
        reference_selection="first n_real examples of the split in stored order",
        is_splits=eval_cfg.is_splits,
        kid_subsets=eval_cfg.kid_subsets,
        kid_std="standard error of TF-GAN's block estimator",
        bn_mode=eval_cfg.bn_mode,
        standing_batches=eval_cfg.standing_batches if eval_cfg.bn_mode == "standing" else None,
        seed=eval_cfg.seed,
        eval_batch_size=eval_cfg.batch_size,
        replicas=None, eval_wall_time_s=None,
        metric_implementation=f"tensorflow-gan {_version('tensorflow-gan')} (float64)",
    )
    record.update(extra or {})
    return record


__all__ = ["protocol_record", "score_images", "take_images"]
