"""One sweep point: the committed generators still reproduce their committed samples, and a
point trains, scores, saves its samples and weights, records relative paths, and is skipped
once finished."""
import json
import os

import numpy as np
import pytest
from synthetic_data import synthetic_input_fn

import replication
from common import files
from experiments import grids, records, trained_generator
from experiments.configs import preset
from experiments.records import Scores
from experiments.running import point
from sngan import models
from sngan.sampling import Sampler

REFERENCE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "results",
                         "fashion_mnist", "points")


@pytest.mark.parametrize("name", ["bs0008_seed0", "bs0512_seed2"])
def test_committed_generator_reproduces_its_committed_samples(name):
    """Loading the committed weights (checksum checked) into today's generator and sampling
    as the point did gives the committed comparison row and class grid (uint8 images, up to
    one grey level of float rounding)."""
    run = os.path.join(REFERENCE, name)
    loaded = trained_generator.load_generator(run, replication.make_replicator("default"))
    cfg, sampler = loaded.config, loaded.sampler
    with np.load(os.path.join(run, records.SAMPLES, "samples.npz")) as committed:
        for got, want in ((point.comparison_samples(sampler, cfg), committed["comparison"]),
                          (point.class_grid_samples(sampler, cfg), committed["class_grid"])):
            got = grids.to_uint8(got)
            assert got.shape == want.shape
            diff = np.abs(got.astype(int) - want.astype(int))
            assert diff.max() <= 1 and (diff == 0).mean() > 0.99


TINY = {"model.g_ch": 8, "model.d_ch": 8, "model.z_dim": 16, "train.global_batch_size": 8,
        "train.n_dis": 1, "train.steps": 2, "train.checkpoint_every": 1,
        "train.log_every": 100, "train.summary_every": 100, "eval.batch_size": 8,
        "eval.every": 1, "eval.replicates": 2}


PROTOCOL = records.read_record(os.path.join(REFERENCE, "bs0008_seed0")).final.protocol


class CountingEvaluator:
    """Stands in for the Evaluator: a score per call, numbered, so the record can be traced."""

    def __init__(self, sampler_source):
        self.calls = []
        self._sampler_source = sampler_source

    def score(self, generator, replicator, step, images_seen=None, eval_seed=None):
        self.calls.append((step, eval_seed))
        return Scores(is_mean=float(len(self.calls)), is_std=0.0, fid=10.0 - len(self.calls),
                      kid_mean=0.01, kid_std=0.0, n_fake=16, n_real=16,
                      protocol=PROTOCOL, step=step,
                      images_seen=images_seen)

    def sampler_for(self, generator, replicator):
        return self._sampler_source(generator, replicator)


def test_a_point_records_scores_samples_and_weights_then_is_skipped(tmp_path, monkeypatch):
    cfg = preset("fashion_mnist", TINY)
    monkeypatch.setattr(point, "training_input_fn",
                        lambda c: synthetic_input_fn(c.train.global_batch_size))
    evaluator = CountingEvaluator(lambda g, r: Sampler(g, r, cfg.model.z_dim,
                                                       cfg.model.num_classes))
    run = str(tmp_path / "points" / "bs0008_seed0")
    replicator = replication.make_replicator("default")
    record = point.run_point(cfg, run, replicator, evaluator, point="bs0008_seed0")

    # eval.every=1 scores step 1 during training (step 2 is the last: scored at the end),
    # then one replicate with the next evaluation seed
    assert evaluator.calls == [(1, None), (2, None), (2, cfg.eval.seed + 1)]
    assert (record.status, record.steps, record.images_seen) == ("done", 2, 16)
    assert record.final.step == 2 and record.final.is_mean == 2.0
    assert [r.is_mean for r in record.replicates] == [3.0]
    assert record.point == "bs0008_seed0" and record.bn_batch_per_replica == 8
    assert [h.step for h in records.read_history(run)] == [1, 2]
    # paths are relative to the point directory; the checksum is the file's
    assert record.generator_weights == records.GENERATOR and not os.path.isabs(
        record.generator_weights)
    assert record.generator_sha256 == files.file_sha256(os.path.join(run, records.GENERATOR))
    assert records.read_record(run) == record
    with np.load(os.path.join(run, records.SAMPLES, "samples.npz")) as samples:
        assert samples["comparison"].shape == (point.COMPARISON_SAMPLES, 32, 32, 1)
        assert samples["class_grid"].shape == (10, 8, 32, 32, 1)
        assert samples["comparison"].dtype == np.uint8
    assert os.path.exists(os.path.join(run, records.SAMPLES, "class_grid.png"))

    class MustNotScore(CountingEvaluator):
        def score(self, *args, **kwargs):
            raise AssertionError("a finished point was trained or scored again")

    again = point.run_point(cfg, run, replicator, MustNotScore(None), point="bs0008_seed0")
    assert again == record


def test_comparison_rows_are_one_class_with_the_same_latents():
    """Every comparison image is of `eval.sample_class`, drawn from a fixed seed: two calls
    give the same images, and the class grid holds `per_class` rows per class."""
    cfg = preset("fashion_mnist", TINY)
    replicator = replication.make_replicator("default")
    with replicator.context():
        generator = models.build_generator(cfg.model)
    seen = []

    class Recording(Sampler):
        def sample(self, n, seed=0, labels=None, **kwargs):
            seen.append((n, seed, None if labels is None else labels.tolist(), kwargs))
            return super().sample(n, seed=seed, labels=labels, **kwargs)

    sampler = Recording(generator, replicator, cfg.model.z_dim, cfg.model.num_classes)
    a = point.comparison_samples(sampler, cfg)
    b = point.comparison_samples(sampler, cfg)
    np.testing.assert_array_equal(a, b)
    grid = point.class_grid_samples(sampler, cfg, per_class=2)
    assert grid.shape == (10, 2, 32, 32, 1)
    bn = dict(bn_mode=cfg.eval.bn_mode, batch_size=cfg.eval.batch_size,
              standing_batches=cfg.eval.standing_batches)
    assert seen[0] == (8, point.COMPARISON_SEED, [cfg.eval.sample_class] * 8, bn)
    assert seen[2] == (20, point.COMPARISON_SEED + 1,
                       [c for c in range(10) for _ in range(2)], bn)


def test_summary_states_how_the_point_ended_and_its_final_scores():
    """What `train` prints, for the committed batch-8 point (its numbers in its metrics.json)
    and for the same point had it diverged (no scores then)."""
    record = records.read_record(os.path.join(
        os.path.dirname(__file__), "..", "..", "..", "results", "fashion_mnist", "points",
        "bs0008_seed0"))
    head, scores = point.summary(record).rsplit("\n", 1)
    assert json.loads(head) == dict(status="done", steps=1000, images_seen=16000,
                                    train_wall_time_s=119.675)
    assert scores == "IS 2.869 ± 0.054  FID 960.589  KID 24811.08573"
    diverged = record.replace(status="diverged", diverged_at=412, final=None)
    assert json.loads(point.summary(diverged))["status"] == "diverged"
