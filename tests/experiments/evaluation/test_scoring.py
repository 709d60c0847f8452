"""score_images streams exactly num_fake images and labels the scores with their protocol."""
import numpy as np
import pytest

from experiments.config import EvalConfig
from experiments.evaluation import metrics, scoring
from experiments.evaluation.classifiers.base import iterate_batches


class LinearClassifier:
    """logits = x W, features = x V on flattened images; records the batch sizes it saw."""

    name = "linear"
    version = "sha256:test"
    resize_method = "none"
    feature_layer = "x"
    feature_dim = 6
    num_classes = 4

    def __init__(self):
        rng = np.random.default_rng(0)
        self.w, self.v = rng.normal(size=(48, 4)), rng.normal(size=(48, 6))
        self.batches = []

    def activations(self, images, batch_size=500):
        rows = []
        for batch in iterate_batches(images, batch_size):
            self.batches.append(len(batch))
            rows.append(np.asarray(batch, np.float64).reshape(len(batch), -1))
        x = np.concatenate(rows)
        return x @ self.w, x @ self.v


EVAL = EvalConfig(protocol="custom", num_fake=250, num_real=400, is_splits=5, kid_subsets=4,
                  batch_size=64, seed=7)


def test_scores_equal_the_metrics_on_exactly_num_fake_images():
    rng = np.random.default_rng(1)
    fakes = rng.uniform(-1, 1, size=(300, 4, 4, 3)).astype(np.float32)
    real_features = rng.normal(size=(400, 6))
    clf = LinearClassifier()
    batches = (fakes[i:i + 100] for i in range(0, 300, 100))  # overshoots num_fake by 50
    scores = scoring.score_images(batches, clf, real_features, EVAL)

    logits, features = LinearClassifier().activations(fakes[:250])
    assert scores["n_fake"] == 250 and scores["n_real"] == 400
    assert max(clf.batches) <= 64 and sum(clf.batches) == 250
    assert (scores["is_mean"], scores["is_std"]) == pytest.approx(
        metrics.inception_score(logits, 5), rel=1e-12)
    assert scores["fid"] == pytest.approx(metrics.frechet_distance(real_features, features),
                                          rel=1e-12)
    assert (scores["kid_mean"], scores["kid_std"]) == pytest.approx(
        metrics.kernel_distance(real_features, features, 4, seed=7), rel=1e-12)


def test_too_few_generated_images_is_an_error():
    fakes = np.zeros((100, 4, 4, 3), np.float32)
    with pytest.raises(ValueError, match="num_fake=250"):
        scoring.score_images(fakes, LinearClassifier(), np.zeros((400, 6)), EVAL)


def test_protocol_record_names_everything_a_score_depends_on():
    record = scoring.protocol_record(EVAL, LinearClassifier(), 250, 400,
                                     replicas=4, eval_wall_time_s=1.5).to_dict()
    assert record["classifier"] == "linear" and record["classifier_version"] == "sha256:test"
    assert (record["n_fake"], record["n_real"], record["reference_split"], record["is_splits"],
            record["bn_mode"], record["seed"], record["replicas"],
            record["eval_wall_time_s"]) == (250, 400, "test", 5, "batch", 7, 4, 1.5)
    assert record["classifier_resize"] == "none" and record["standing_batches"] is None
    assert "tensorflow-gan" in record["metric_implementation"]


def test_named_protocols_carry_their_counts():
    assert (EvalConfig.for_protocol("standard").num_fake,
            EvalConfig.for_protocol("standard").num_real) == (50_000, 50_000)
    record = scoring.protocol_record(EvalConfig.for_protocol("sngan_paper"), LinearClassifier(),
                                     5_000, 10_000).to_dict()
    assert (record["protocol"], record["n_fake"], record["n_real"]) == ("sngan_paper", 5_000,
                                                                          10_000)
