"""What an evaluation measured, as typed records: scores with their protocol, CAS, memorisation.

`Scores` (IS/FID/KID and recognisability) never travels without the `Protocol` that makes it
comparable; `CasScore` carries its `CasRecipe`; `MemorisationScore` its nearest pairs; `RealRow`
holds the same metrics with real images in the generator's place (each table row's ceiling).
A point's record (point_record.py) keeps these for its final generator.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from experiments.record_base import Record, RecordError


@dataclass(frozen=True)
class Protocol(Record):
    """Everything a reader needs to compare a score: FID depends on the sample counts, the
    reference split, the classifier and its input resizing (10k/5k vs 50k/50k differ by
    several points for the same model), so no score is stored without this."""
    protocol: str
    classifier: str
    classifier_version: str | None
    classifier_resize: str | None
    classifier_features: str | None
    n_real: int
    n_fake: int
    reference_split: str
    is_splits: int
    kid_subsets: int
    bn_mode: str
    seed: int
    eval_batch_size: int
    metric_implementation: str
    reference_selection: str = "first n_real examples of the split in stored order"
    kid_std: str = "standard error of TF-GAN's block estimator"
    # precision/recall/density/coverage k-NN distances; records written before this field
    # existed computed them in float64 (uncentred)
    knn_dtype: str = "float64"
    standing_batches: int | None = None
    replicas: int | None = None
    step: int | None = None
    eval_wall_time_s: float | None = None
    dataset: str | None = None
    resolution: int | None = None


@dataclass(frozen=True)
class Scores(Record):
    """One evaluation of a generator (IS over splits, FID, KID), with its protocol."""
    is_mean: float
    is_std: float
    fid: float
    kid_mean: float
    kid_std: float
    n_fake: int
    n_real: int
    protocol: Protocol
    step: int | None = None
    images_seen: int | None = None
    classify_time_s: float | None = None
    metrics_time_s: float | None = None
    # recognisability (None where they do not apply, e.g. accuracy of an unconditional model)
    accuracy: float | None = None  # classifier top-1 vs the conditioning labels
    per_class_accuracy: list | None = None
    intra_fid: float | None = None  # mean of the per-class FIDs
    per_class_fid: list | None = None
    precision: float | None = None  # improved precision/recall, k = 3
    recall: float | None = None
    density: float | None = None  # density/coverage, k = 5
    coverage: float | None = None
    # the gradient noise scale's smoothed B_simple for D and G at this step (NoiseScale says how)
    b_simple_d: float | None = None
    b_simple_g: float | None = None


@dataclass(frozen=True)
class CasRecipe(Record):
    """The fixed recipe of a Classification Accuracy Score (Ravuri & Vinyals, arXiv 1905.10887):
    a classifier trained only on `per_class` images of every class, tested on the real
    `test_split`. Every field changes the score, so all of them make its key."""
    per_class: int = 1000
    epochs: int = 3
    batch_size: int = 128
    learning_rate: float = 2e-3
    seed: int = 0  # weights' initialisation, dropout and the data order
    sample_seed: int = 1234  # the generator's latents
    # BN's moving-average momentum: a short run (80 steps of 2,000 images) at Keras' 0.99 kept
    # 45% of the initial statistics and tested at 0.40 against 0.77 in training
    bn_momentum: float = 0.9
    architecture: str = ("the shipped Fashion-MNIST classifier's CNN at half width, fresh "
                         "weights: 3 x (conv3x3-BN-ReLU-maxpool, 16/32/64), dropout 0.3, "
                         "dense 128, dropout 0.3, dense 10")
    optimizer: str = "adam, cosine decay to 0, sparse softmax cross-entropy"
    augmentation: str = "none"
    test_split: str = "test"

    def __post_init__(self):
        for name in ("per_class", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise RecordError(f"CAS recipe: {name} must be >= 1, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise RecordError(f"CAS recipe: learning_rate must be > 0, got {self.learning_rate}")
        if not 0 <= self.bn_momentum < 1:
            raise RecordError(f"CAS recipe: bn_momentum must be in [0, 1), got {self.bn_momentum}")

    @property
    def key(self) -> str:
        """Names the recipe in PointRecord.cas: its counts and schedule, and a digest of all."""
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        return (f"cas_{self.per_class}pc_e{self.epochs}_b{self.batch_size}_s{self.seed}_"
                f"z{self.sample_seed}_{digest}")


@dataclass(frozen=True)
class CasScore(Record):
    """A CAS: top-1 of a `recipe` classifier on the real test split, overall and per class.
    `trained_on` is 'generated' (a point's generator, sampled in BN mode `bn_mode`) or the real
    split that gives the ceiling ('train': the first `per_class` images of each class)."""
    recipe: CasRecipe
    trained_on: str
    accuracy: float
    per_class_accuracy: list[float]
    n_train: int
    n_test: int
    train_accuracy_last_epoch: float
    train_time_s: float
    wall_time_s: float
    bn_mode: str | None = None
    step: int | None = None


@dataclass(frozen=True)
class NearestPair(Record):
    """A generated image (index in the sampled set) and its nearest training image."""
    generated_index: int
    train_index: int
    distance: float
    label: int | None = None  # the class the generated image was conditioned on


@dataclass(frozen=True)
class MemorisationScore(Record):
    """How close generated images come to the training set, against real held-out images.

    Exact nearest-neighbour L2 distances in `space` ('pixels': [-1, 1] images; else a
    classifier's features) from `n_generated` generated images and from `n_test` real test
    images to the `n_train` training images. `threshold` is the `percentile`-th percentile of
    the test images' distances; `fraction_closer` the share of generated images nearer than it
    (~percentile/100 when they are as close to the training set as unseen real images are,
    ~1 when they copy it). `closest` holds the closest pairs, nearest first."""
    space: str
    classifier: str | None
    classifier_version: str | None
    n_generated: int
    n_test: int
    n_train: int
    percentile: float
    threshold: float
    fraction_closer: float
    generated_median: float
    test_median: float
    closest: list[NearestPair]
    seed: int
    bn_mode: str | None
    wall_time_s: float
    step: int | None = None

    @staticmethod
    def key_for(space: str, classifier_version: str | None, n_generated: int,
                percentile: float, seed: int, bn_mode: str | None) -> str:
        where = space if classifier_version is None else f"{space}@{classifier_version[:12]}"
        return f"{where}/n{n_generated}/p{percentile:g}/seed{seed}/{bn_mode}"

    @property
    def key(self) -> str:
        return self.key_for(self.space, self.classifier_version, self.n_generated,
                            self.percentile, self.seed, self.bn_mode)


@dataclass(frozen=True)
class RealRow(Record):
    """Every metric of the tables with real images in the generator's place: the first
    `scores.n_fake` images of `stand_in_split` scored under the protocol (against the
    reference split, as generated samples are), so each table row has its ceiling beside it.
    `reference_is_*`: the reference split's own IS; `self_fid`: the reference against itself
    (0 up to rounding: the floor of FID). `cas_ceiling`: the CAS recipe trained on real
    training images. `memorisation_threshold` / `memorisation_test_median`: per space, the
    percentile (`memorisation_percentile`) and median of the real test images' distances to
    the nearest training image."""
    cache_key: dict
    stand_in_split: str
    scores: Scores
    reference_is_mean: float
    reference_is_std: float
    self_fid: float
    cas_ceiling: CasScore | None
    memorisation_percentile: float
    memorisation_threshold: dict[str, float]
    memorisation_test_median: dict[str, float]
    wall_time_s: float

