"""Does a generator copy its training set? Nearest-training-image distances, against real ones.

For each generated image, the L2 distance to its nearest training image, in pixels ([-1, 1]
images, flattened) or in a classifier's features (any `classifiers.Classifier`); beside it
the same distance for real test images, which the generator never saw and which are as close
to the training set as an honest sample of the distribution should be. The check reports the
share of generated images closer to a training image than the `percentile`-th percentile
(default 5th) of the test images' distances: about percentile/100 for a generator whose
samples are as novel as unseen real images, about 1 for one that reproduces its training set
(the test of Webster et al., arXiv 1905.05669, and the nearest-neighbour figures of GAN papers,
made a number). It cannot tell copying from a generator that draws unusually typical images,
so the closest pairs are returned for a figure (`closest_pairs_figure`): look at them.

The search is exact and in memory: numpy float32 matrix products in chunks of queries on data
centred at the training mean (|q|^2 + |t|^2 - 2 q.t), the `CANDIDATES` smallest of each row
then re-ranked by distances computed directly in float64, so float32 rounding cannot pick a
wrong neighbour unless more than `CANDIDATES` training images tie within it.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from experiments.records import MemorisationScore, NearestPair

PERCENTILE = 5.0
CANDIDATES = 8  # re-ranked exactly per query
_CHUNK_ELEMENTS = 1 << 24  # distances per chunk: 16M float32 = 64 MB
PIXELS = "pixels"


@dataclasses.dataclass(frozen=True)
class Neighbours:
    """Per query: the index of its nearest reference row and the (exact) L2 distance."""
    indices: np.ndarray  # [N] int64
    distances: np.ndarray  # [N] float64


def _rows(x, name: str) -> np.ndarray:
    x = np.asarray(x)
    x = x.reshape(len(x), -1) if x.ndim > 2 else x
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty set of vectors or images, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or inf")
    return x


def nearest_neighbours(queries, reference, candidates: int = CANDIDATES) -> Neighbours:
    """Exact nearest neighbour in `reference` of every row (or image) of `queries`, L2."""
    q64, r64 = _rows(queries, "queries"), _rows(reference, "reference")
    if q64.shape[1] != r64.shape[1]:
        raise ValueError(f"queries have {q64.shape[1]} dimensions, reference {r64.shape[1]}")
    centre = r64.mean(axis=0, dtype=np.float64)
    r = (r64 - centre).astype(np.float32)
    r_sq = np.einsum("ij,ij->i", r, r)
    k = min(candidates, len(r))
    chunk = max(1, _CHUNK_ELEMENTS // len(r))
    indices = np.empty(len(q64), np.int64)
    distances = np.empty(len(q64), np.float64)
    for start in range(0, len(q64), chunk):
        q = (q64[start:start + chunk] - centre).astype(np.float32)
        d = r_sq[None, :] - 2.0 * (q @ r.T)  # |q|^2 is the same along a row: not needed
        near = np.argpartition(d, k - 1, axis=1)[:, :k] if k < len(r) else \
            np.broadcast_to(np.arange(len(r)), d.shape)
        exact = np.linalg.norm(q64[start:start + chunk, None, :].astype(np.float64)
                               - r64[near].astype(np.float64), axis=2)
        best = np.argmin(exact, axis=1)
        rows = np.arange(len(near))
        indices[start:start + len(near)] = near[rows, best]
        distances[start:start + len(near)] = exact[rows, best]
    return Neighbours(indices, distances)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Generated and test images' nearest-training distances in one space, and the verdict."""
    generated: Neighbours
    test: Neighbours
    percentile: float
    threshold: float  # the percentile of the test distances
    fraction_closer: float  # share of generated images with distance < threshold

    def closest(self, k: int, labels=None) -> list[NearestPair]:
        order = np.argsort(self.generated.distances, kind="stable")[:k]
        return [NearestPair(int(i), int(self.generated.indices[i]),
                            float(self.generated.distances[i]),
                            None if labels is None else int(labels[i])) for i in order]


def compare(generated, train, percentile: float = PERCENTILE, test=None,
            test_neighbours: Neighbours | None = None) -> Comparison:
    """Nearest-training distances of `generated` and of `test` (vectors or images) in one space.

    `test_neighbours` replaces `test`: the test images' neighbours computed before (they
    depend on no generator, so a sweep computes them once)."""
    if not 0 < percentile < 100:
        raise ValueError(f"percentile must lie in (0, 100), got {percentile}")
    if (test is None) == (test_neighbours is None):
        raise ValueError("give the test images or their precomputed neighbours (one of them)")
    gen = nearest_neighbours(generated, train)
    ref = test_neighbours or nearest_neighbours(test, train)
    threshold = float(np.percentile(ref.distances, percentile))
    return Comparison(gen, ref, percentile, threshold,
                      float(np.mean(gen.distances < threshold)))


def score(comparison: Comparison, space: str, classifier=None, n_train: int = 0,
          seed: int = 0, bn_mode: str | None = None, k: int = 16, labels=None,
          wall_time_s: float = 0.0, step: int | None = None) -> MemorisationScore:
    """The record of a comparison (`classifier`: the features' extractor, None for pixels)."""
    return MemorisationScore(
        space=space, classifier=getattr(classifier, "name", None),
        classifier_version=getattr(classifier, "version", None),
        n_generated=len(comparison.generated.distances), n_test=len(comparison.test.distances),
        n_train=int(n_train), percentile=float(comparison.percentile),
        threshold=comparison.threshold, fraction_closer=comparison.fraction_closer,
        generated_median=float(np.median(comparison.generated.distances)),
        test_median=float(np.median(comparison.test.distances)),
        closest=comparison.closest(k, labels), seed=int(seed), bn_mode=bn_mode,
        wall_time_s=round(float(wall_time_s), 3), step=step)


def features_of(classifier, images, batch_size: int = 500) -> np.ndarray:
    """An extractor's features of `images` (any classifier of the evaluation interface)."""
    return classifier.activations(images, batch_size=batch_size)[1]


def check(generated, train, test, classifier=None, percentile: float = PERCENTILE,
          train_features=None, test_neighbours: dict | None = None, labels=None,
          seed: int = 0, bn_mode: str | None = None, k: int = 16,
          step: int | None = None) -> dict[str, tuple[MemorisationScore, Comparison]]:
    """The memorisation check in pixels and (with `classifier`) in its features.

    Images are [N, H, W, C] in [-1, 1]. `train_features`, `test_neighbours` ({space:
    Neighbours}): precomputed and cached by the caller (`real_row`), else computed here.
    Returns {space: (record, comparison)}; the space of features is the classifier's name."""
    test_neighbours = test_neighbours or {}
    out = {}
    t0 = time.perf_counter()
    cached = test_neighbours.get(PIXELS)
    c = compare(generated, train, percentile, None if cached else test, cached)
    out[PIXELS] = (score(c, PIXELS, None, len(train), seed, bn_mode, k, labels,
                         time.perf_counter() - t0, step), c)
    if classifier is not None:
        t0 = time.perf_counter()
        train_f = features_of(classifier, train) if train_features is None else train_features
        cached = test_neighbours.get(classifier.name)
        c = compare(features_of(classifier, generated), train_f, percentile,
                    None if cached else features_of(classifier, test), cached)
        out[classifier.name] = (score(c, classifier.name, classifier, len(train), seed,
                                      bn_mode, k, labels, time.perf_counter() - t0, step), c)
    return out


def closest_pairs_figure(generated, train, pairs: list[NearestPair], path: str,
                         title: str = "", class_names: list[str] | None = None,
                         formats: tuple[str, ...] = (".png", ".pdf")) -> None:
    """Two rows, one column per pair: the generated image above its nearest training image,
    each column titled with its distance (and class), nearest first."""
    from experiments import grids

    generated, train = np.asarray(generated), np.asarray(train)
    cols = [f"{p.distance:.2f}" if p.label is None or class_names is None
            else f"{class_names[p.label]}\n{p.distance:.2f}" for p in pairs]
    grids.image_rows([generated[[p.generated_index for p in pairs]],
                      train[[p.train_index for p in pairs]]],
                     ["generated", "nearest\ntraining"], path, title=title, col_labels=cols,
                     formats=formats)
