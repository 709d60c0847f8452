"""train.stop_at: a run ends at the first evaluation meeting its condition, records the step,
and a run killed after that evaluation but before its record resumes as stopped, not trained
further."""
import os

import pytest
from synthetic_data import synthetic_input_fn
from test_point import TINY, CountingEvaluator

import replication
from experiments import records
from experiments.config import ConfigError, parse_stop_at, stop_reached
from experiments.configs import preset
from experiments.running import point
from sngan.sampling import Sampler


def _run(tmp_path, monkeypatch, evaluator_cls=CountingEvaluator, **overrides):
    cfg = preset("fashion_mnist", {**TINY, "train.steps": 5, **overrides})
    monkeypatch.setattr(point, "training_input_fn",
                        lambda c: synthetic_input_fn(c.train.global_batch_size))
    evaluator = evaluator_cls(lambda g, r: Sampler(g, r, cfg.model.z_dim,
                                                   cfg.model.num_classes))
    run = str(tmp_path / "points" / "bs0008_seed0")
    record = point.run_point(cfg, run, replication.make_replicator("default"), evaluator)
    return record, evaluator, run


def test_a_run_stops_at_the_first_evaluation_meeting_its_condition(tmp_path, monkeypatch):
    # CountingEvaluator scores IS 1, 2, 3, ... in call order: step 2 is the first IS >= 2
    record, evaluator, run = _run(tmp_path, monkeypatch, **{"train.stop_at": "is_mean>=2"})
    assert (record.status, record.steps, record.stopped_at) == ("done", 2, 2)
    assert record.final.step == 2 and record.final.is_mean == 2.0
    assert evaluator.calls == [(1, None), (2, None), (2, 1235)]  # then one replicate
    assert [h.step for h in records.read_history(run)] == [1, 2]
    # the record names the environment its run started in
    [env] = record.environments
    assert env.source == "measured" and env.started_at_step == 0 and env.devices
    assert records.read_environments(run) == [env]


def test_without_stop_at_a_run_goes_to_its_steps(tmp_path, monkeypatch):
    record, _, _ = _run(tmp_path, monkeypatch)
    assert (record.steps, record.stopped_at) == (5, None)


def test_a_stopped_run_killed_before_its_record_resumes_as_stopped(tmp_path, monkeypatch):
    _, _, run = _run(tmp_path, monkeypatch, **{"train.stop_at": "is_mean>=2"})
    os.remove(os.path.join(run, records.METRICS))  # killed after the stop, before the record

    class NoTrainingScores(CountingEvaluator):
        def score(self, generator, replicator, step, images_seen=None, eval_seed=None):
            assert eval_seed is not None, f"scored training step {step} again"
            return super().score(generator, replicator, step, images_seen, eval_seed)

    record, evaluator, _ = _run(tmp_path, monkeypatch, NoTrainingScores,
                                **{"train.stop_at": "is_mean>=2"})
    assert (record.steps, record.stopped_at, record.final.step) == (2, 2, 2)
    assert evaluator.calls == [(2, 1235)]


def test_stop_at_parses_and_refuses_what_it_cannot_check():
    assert parse_stop_at("is_mean>=7.5") == ("is_mean", ">=", 7.5)
    assert parse_stop_at(" fid <= 50 ") == ("fid", "<=", 50.0)
    for bad, words in (("is_mean>7", "METRIC>=VALUE"), ("loss>=1", "metric"),
                       ("fid>=50", "improves the other way"), ("is_mean>=x", "METRIC")):
        with pytest.raises(ConfigError, match=words):
            parse_stop_at(bad)
    with pytest.raises(ConfigError, match="set eval.every"):
        preset("fashion_mnist", {"train.stop_at": "is_mean>=7", "eval.every": 0})


def test_stop_reached_compares_the_named_score():
    class S:
        is_mean, fid, accuracy = 7.4, 60.0, None
    assert not stop_reached("is_mean>=7.5", S) and stop_reached("is_mean>=7.4", S)
    assert stop_reached("fid<=60", S) and not stop_reached("fid<=59.9", S)
    assert not stop_reached("accuracy>=0.1", S)  # not measured: never met
    assert not stop_reached(None, S)
