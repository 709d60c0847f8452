"""Real-data features for FID/KID, computed once and cached as `.npz` keyed by their protocol.

Classifying 50k real images costs minutes (far more with Inception on a CPU), and
every evaluation of every sweep point needs the same ones. The cache key holds everything the
features depend on: dataset, split, resolution and resize of the data; classifier name,
version (weights hash), resize and feature layer; and the sample count. Any change of those
gives a different file name, and the key stored inside the file is checked again on load, so a
stale or foreign file is never used. Files are written atomically (temp file + `os.replace`)
and loaded with `allow_pickle=False`. Features are cached, not only mean/covariance, because
KID needs them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import zipfile
from pathlib import Path

import numpy as np

from common import files
from experiments.config import ConfigError
from experiments.data import sources

log = logging.getLogger(__name__)

CACHE_FORMAT = 2  # 2: labels stored beside the features (per-class metrics)
ENV_VAR = "SNGAN_CACHE_DIR"
SELECTION = "first N examples of the split in the dataset's stored order"


def default_cache_dir() -> str:
    return os.environ.get(ENV_VAR) or os.path.join(os.path.expanduser("~"), ".cache",
                                                   "sngan_study")


@dataclasses.dataclass(frozen=True)
class ReferenceStats:
    features: np.ndarray  # [n_real, F] float64
    labels: np.ndarray  # [n_real] int32, the images' classes (per-class metrics)
    mu: np.ndarray  # [F]
    sigma: np.ndarray  # [F, F], unbiased
    key: dict
    path: str


def cache_key(data_cfg, eval_cfg, classifier) -> dict:
    key = dict(format=CACHE_FORMAT, dataset=data_cfg.name, split=eval_cfg.reference_split,
               resolution=data_cfg.resolution, data_resize=data_cfg.resize_method,
               classifier=classifier.name, classifier_version=classifier.version,
               classifier_resize=classifier.resize_method,
               classifier_features=classifier.feature_layer,
               count=eval_cfg.num_real,
               selection=SELECTION)
    key["source"] = sources.resolve(data_cfg).describe()  # IDX files and TFDS differ in bytes
    return key


def cache_path(cache_dir: str | os.PathLike, key: dict) -> Path:
    digest = hashlib.sha256(_key_text(key).encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{key['dataset']}_{key['split']}_{key['resolution']}_"
                                           f"{key['classifier']}_{key['count']}")
    return Path(cache_dir) / f"{slug}_{digest}.npz"


def _key_text(key: dict) -> str:
    return json.dumps(key, sort_keys=True)


def real_images(data_cfg, split: str, count: int, batch_size: int = 500):
    """Iterator over (images, labels) batches of the first `count` real images of `split`,
    images in [-1, 1].

    The training pipeline itself (unshuffled, one pass), so reference images get exactly the
    transform the GAN's inputs get. Its batches drop the remainder, hence a batch size that
    divides `count`.
    """
    from experiments import data

    available = data.dataset_size(data_cfg, split)
    if count > available:
        raise ConfigError(f"{data_cfg.name}/{split} has {available} images; the protocol asks "
                          f"for num_real={count}: use eval.protocol=custom with eval.num_real <= "
                          f"{available}, or another eval.reference_split")
    batch = math.gcd(count, batch_size)
    input_fn = data.make_input_fn(data_cfg, batch, split, seed=0, repeat=False, shuffle=False)
    return iter(input_fn(None).take(count // batch))


def compute(data_cfg, eval_cfg, classifier) -> tuple[np.ndarray, np.ndarray]:
    """(features, labels) of the protocol's real images."""
    labels = []

    def images():
        for x, y in real_images(data_cfg, eval_cfg.reference_split, eval_cfg.num_real,
                                batch_size=eval_cfg.batch_size):
            labels.append(np.asarray(y, np.int32))
            yield x

    _, features = classifier.activations(images(), batch_size=eval_cfg.batch_size)
    if len(features) != eval_cfg.num_real:
        raise ValueError(f"{data_cfg.name}/{eval_cfg.reference_split} gave {len(features)} "
                         f"images, the protocol needs num_real={eval_cfg.num_real}")
    return features, np.concatenate(labels)


def _load(path: Path, key: dict, feature_dim: int) -> ReferenceStats | None:
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored_key = str(npz["key"])
            features, mu, sigma = npz["features"], npz["mu"], npz["sigma"]
            labels = npz["labels"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        log.info(f"reference stats: {path} is unreadable ({type(e).__name__}: {e}); recomputing")
        return None
    if stored_key != _key_text(key):
        log.info(f"reference stats: {path} was made for another protocol; recomputing")
        return None
    if features.shape != (key["count"], feature_dim):
        log.info(f"reference stats: {path} holds features {features.shape}, expected "
            f"{(key['count'], feature_dim)}; recomputing")
        return None
    if labels.shape != (key["count"],):
        log.info(f"reference stats: {path} holds {labels.shape} labels; recomputing")
        return None
    return ReferenceStats(features, labels, mu, sigma, key, str(path))


def _save(path: Path, stats: ReferenceStats) -> None:
    with files.atomic_writer(path, "wb") as f:
        np.savez(f, features=stats.features, labels=stats.labels, mu=stats.mu, sigma=stats.sigma,
                 key=np.array(_key_text(stats.key)))


def reference_statistics(data_cfg, eval_cfg, classifier, cache_dir=None) -> ReferenceStats:
    """Cached real features (+ mean and unbiased covariance), computing them on a miss."""
    key = cache_key(data_cfg, eval_cfg, classifier)
    path = cache_path(cache_dir or default_cache_dir(), key)
    stats = _load(path, key, classifier.feature_dim)
    if stats is None:
        log.info(f"reference stats: classifying {eval_cfg.num_real} {data_cfg.name}/"
                 f"{eval_cfg.reference_split} images with {classifier.name} -> {path}")
        features, labels = compute(data_cfg, eval_cfg, classifier)
        stats = ReferenceStats(features, labels, features.mean(axis=0),
                               np.atleast_2d(np.cov(features, rowvar=False)), key, str(path))
        _save(path, stats)
    return stats


def reference_activations(data_cfg, eval_cfg, classifier, cache_dir=None) -> np.ndarray:
    """Real-data features [num_real, F] (float64) for FID/KID, from the cache when valid."""
    return reference_statistics(data_cfg, eval_cfg, classifier, cache_dir).features
