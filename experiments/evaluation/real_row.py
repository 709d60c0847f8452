"""The real-data row of every metric: real images scored as if a generator had drawn them.

A table of generators says little without its ceiling and floor (TF-GAN's MNIST score and the
MNIST IS literature print the real test set's score beside the models'). `real_row` scores the
first `num_fake` images of the split the protocol does not use as reference (the training
split under `fast`, whose reference is the test split) exactly as a generator's samples are
scored: IS, FID, KID, conditional accuracy, intra-FID, precision/recall, density/coverage;
beside them the reference split's own IS, its FID against itself (0: the floor), the CAS
recipe trained on real images (the CAS ceiling) and the memorisation check's real side (the
test images' distances to the nearest training image).

Everything real is computed once per protocol and extractor and cached where reference
statistics are (`reference_stats.default_cache_dir()`): the row as JSON, the test images'
nearest-training neighbours as `.npz`, the training split's features through
`reference_stats` itself. Cache files carry their key (the reference statistics' key, which
names data source, split, classifier and its weights' hash, plus this row's settings) and are
recomputed when it differs.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import re
import time
import zipfile
from pathlib import Path

import numpy as np

from common import files
from experiments.evaluation import (
    cas,
    fidelity_diversity,
    memorisation,
    metrics,
    reference_stats,
    scoring,
)
from experiments.records import CasRecipe, RealRow, RecordError, Scores

log = logging.getLogger(__name__)

FORMAT = 1
OTHER_SPLIT = {"test": "train", "train": "test"}
HELD_OUT_SPLIT = "test"  # the memorisation check's real images the generator never saw


def real_arrays(data_cfg, split: str, count: int | None = None,
                batch_size: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """(images float32 in [-1, 1], labels int64) of the first `count` images of `split`
    (default: all), through the training pipeline (reference_stats.real_images)."""
    from experiments import data

    count = count or data.dataset_size(data_cfg, split)
    images, labels = [], []
    for x, y in reference_stats.real_images(data_cfg, split, count, batch_size):
        images.append(np.asarray(x, np.float32))
        labels.append(np.asarray(y, np.int64))
    return np.concatenate(images), np.concatenate(labels)


def _split_eval(eval_cfg, split: str, count: int):
    """`eval_cfg` with another reference split and count (for reference_stats' cache)."""
    return dataclasses.replace(eval_cfg, protocol="custom", reference_split=split,
                               num_real=count, batch_size=500)  # 500 divides the split sizes


def _cache_file(cache_dir, kind: str, key: dict, suffix: str) -> Path:
    text = json.dumps(key, sort_keys=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{kind}_{key['dataset']}_{key['split']}_"
                                         f"{key['classifier']}_{key['count']}")
    return Path(cache_dir) / f"{slug}_{hashlib.sha256(text.encode()).hexdigest()[:16]}{suffix}"


class RealSide:
    """The real images and features a sweep's robustness scores compare against, loaded once:
    the training split (what a generator could copy), the held-out test split, the extractor's
    features of both (cached by reference_stats) and the test images' nearest training images
    (cached here)."""

    def __init__(self, data_cfg, eval_cfg, classifier, cache_dir=None,
                 held_out_split: str = HELD_OUT_SPLIT, train_count: int | None = None,
                 test_count: int | None = None):
        """`train_count`, `test_count`: the first images of each split (default: all)."""
        self.data_cfg, self.eval_cfg, self.classifier = data_cfg, eval_cfg, classifier
        self.cache_dir = cache_dir or reference_stats.default_cache_dir()
        self.train_split, self.held_out_split = data_cfg.train_split, held_out_split
        self.train_count, self.test_count = train_count, test_count

    @functools.cached_property
    def train(self) -> tuple[np.ndarray, np.ndarray]:
        return real_arrays(self.data_cfg, self.train_split, self.train_count)

    @functools.cached_property
    def test(self) -> tuple[np.ndarray, np.ndarray]:
        return real_arrays(self.data_cfg, self.held_out_split, self.test_count)

    def _stats(self, split: str, count: int):
        return reference_stats.reference_statistics(
            self.data_cfg, _split_eval(self.eval_cfg, split, count), self.classifier,
            self.cache_dir)

    @functools.cached_property
    def train_features(self) -> np.ndarray:
        return self._stats(self.train_split, len(self.train[1])).features

    @functools.cached_property
    def test_features(self) -> np.ndarray:
        return self._stats(self.held_out_split, len(self.test[1])).features

    def _neighbours_key(self, space: str) -> dict:
        stats_key = reference_stats.cache_key(
            self.data_cfg, _split_eval(self.eval_cfg, self.held_out_split, len(self.test[1])),
            self.classifier)
        return dict(stats_key, kind="nearest_train", format=FORMAT, space=space,
                    train_split=self.train_split, train_count=len(self.train[1]),
                    candidates=memorisation.CANDIDATES,
                    **({} if space != memorisation.PIXELS else dict(
                        classifier="pixels", classifier_version=None,
                        classifier_resize=None, classifier_features=None)))

    def _cached_neighbours(self, space: str, compute) -> memorisation.Neighbours:
        key = self._neighbours_key(space)
        path = _cache_file(self.cache_dir, "nearest-train", key, ".npz")
        text = json.dumps(key, sort_keys=True)
        try:
            with np.load(path, allow_pickle=False) as npz:
                if str(npz["key"]) == text:
                    return memorisation.Neighbours(npz["indices"], npz["distances"])
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            pass
        log.info("real side: nearest training images of %d %s images in %s -> %s",
                 len(self.test[1]), self.held_out_split, space, path)
        found = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        with files.atomic_writer(path, "wb") as f:
            np.savez(f, indices=found.indices, distances=found.distances, key=np.array(text))
        return found

    @functools.cached_property
    def test_neighbours(self) -> dict[str, memorisation.Neighbours]:
        """{space: the held-out images' nearest training images}, pixels and features."""
        return {
            memorisation.PIXELS: self._cached_neighbours(
                memorisation.PIXELS,
                lambda: memorisation.nearest_neighbours(self.test[0], self.train[0])),
            self.classifier.name: self._cached_neighbours(
                self.classifier.name,
                lambda: memorisation.nearest_neighbours(self.test_features,
                                                        self.train_features)),
        }


def cache_key(side: RealSide, eval_cfg, stand_in_split: str, cas_recipe: CasRecipe | None,
              percentile: float) -> dict:
    key = reference_stats.cache_key(side.data_cfg, eval_cfg, side.classifier)
    return dict(key, kind="real_row", format=FORMAT, stand_in_split=stand_in_split,
                num_fake=eval_cfg.num_fake, is_splits=eval_cfg.is_splits,
                kid_subsets=eval_cfg.kid_subsets, seed=eval_cfg.seed,
                cas_recipe=None if cas_recipe is None else cas_recipe.to_dict(),
                memorisation_percentile=percentile, held_out_split=side.held_out_split,
                train_count=side.train_count, test_count=side.test_count,
                knn_dtype=np.dtype(fidelity_diversity.DISTANCE_DTYPE).name)


def compute(side: RealSide, eval_cfg, stand_in_split: str | None = None,
            cas_recipe: CasRecipe | None = cas.RECIPE,
            percentile: float = memorisation.PERCENTILE) -> RealRow:
    """The real row under `eval_cfg`'s protocol (uncached; `real_row` caches it)."""
    t0 = time.perf_counter()
    data_cfg, clf = side.data_cfg, side.classifier
    stand_in_split = stand_in_split or OTHER_SPLIT[eval_cfg.reference_split]
    reference = reference_stats.reference_statistics(data_cfg, eval_cfg, clf, side.cache_dir)
    images, labels = real_arrays(data_cfg, stand_in_split, eval_cfg.num_fake)
    logits, features = clf.activations(images, batch_size=eval_cfg.batch_size)
    raw = scoring.score_activations(logits, features, reference.features, eval_cfg)
    raw.update(scoring.recognisability(
        logits, features, labels, reference,
        fidelity_diversity.RealManifold(reference.features), clf,
        data_cfg.name, data_cfg.classes or 0))
    protocol = scoring.protocol_record(eval_cfg, clf, len(logits), len(reference.features),
                                       dataset=data_cfg.name, resolution=data_cfg.resolution)
    ref_images, _ = real_arrays(data_cfg, eval_cfg.reference_split, eval_cfg.num_real)
    ref_logits, _ = clf.activations(ref_images, batch_size=eval_cfg.batch_size)
    ref_is = metrics.inception_score(ref_logits, splits=eval_cfg.is_splits)
    ceiling = None if cas_recipe is None else cas.real_ceiling(
        side.train, side.test, cas_recipe)
    neighbours = side.test_neighbours
    return RealRow(
        cache_key=cache_key(side, eval_cfg, stand_in_split, cas_recipe, percentile),
        stand_in_split=stand_in_split, scores=Scores(**raw, protocol=protocol),
        reference_is_mean=ref_is[0], reference_is_std=ref_is[1],
        self_fid=metrics.frechet_distance(reference.features, reference.features),
        cas_ceiling=ceiling, memorisation_percentile=float(percentile),
        memorisation_threshold={s: float(np.percentile(n.distances, percentile))
                                for s, n in neighbours.items()},
        memorisation_test_median={s: float(np.median(n.distances))
                                  for s, n in neighbours.items()},
        wall_time_s=round(time.perf_counter() - t0, 3))


def real_row(side: RealSide, eval_cfg, stand_in_split: str | None = None,
             cas_recipe: CasRecipe | None = cas.RECIPE,
             percentile: float = memorisation.PERCENTILE) -> RealRow:
    """The real row under `eval_cfg`'s protocol and `side`'s extractor, from its cache file
    when that holds the same key, else computed and cached (a few minutes: most of it the
    CAS ceiling's training)."""
    stand_in_split = stand_in_split or OTHER_SPLIT[eval_cfg.reference_split]
    key = cache_key(side, eval_cfg, stand_in_split, cas_recipe, percentile)
    path = _cache_file(side.cache_dir, "real-row", key, ".json")
    raw = _read(path)
    if raw is not None:
        try:
            row = RealRow.from_dict(raw)
            if row.cache_key == json.loads(json.dumps(key)):
                return row
        except RecordError as e:
            log.info("real row: %s does not hold a real row (%s); recomputing", path, e)
    log.info("real row: computing %s -> %s", eval_cfg.protocol, path)
    row = compute(side, eval_cfg, stand_in_split, cas_recipe, percentile)
    path.parent.mkdir(parents=True, exist_ok=True)
    files.atomic_write_json(path, row.to_dict())
    return row


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
