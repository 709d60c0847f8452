"""Point records: one JSON round trip per record, strict reading (unknown fields and wrong
types rejected, naming the field), paths stored relative to the point directory, and files
that do not parse treated as absent, never as a crash."""
import json
import logging
import os
import shutil

import pytest

from experiments import records
from experiments.records import PointRecord, RecordError, Scores
from experiments.running.sweep import named_spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(ROOT, "results", "fashion_mnist", "points")


def committed(name="bs0064_seed0") -> str:
    return os.path.join(REFERENCE, name)


def raw_record(name="bs0064_seed0") -> dict:
    with open(os.path.join(committed(name), records.METRICS)) as f:
        return json.load(f)


def assert_written_back(raw, out, where="record"):
    """`out` (to_dict of what `raw` was read into) keeps every value of `raw` exactly. Keys it
    adds are fields newer than the file: from_dict gave them their defaults."""
    if isinstance(raw, dict):
        assert isinstance(out, dict), where
        for key in raw:
            assert_written_back(raw[key], out[key], f"{where}.{key}")
    elif isinstance(raw, list):
        assert len(raw) == len(out), where
        for i, (a, b) in enumerate(zip(raw, out)):
            assert_written_back(a, b, f"{where}[{i}]")
    else:
        assert raw == out and type(raw) is type(out), where


def test_every_committed_record_round_trips_exactly():
    """Every committed metrics.json and history entry reads into records that write back its
    every value, and from_dict(to_dict(r)) == r."""
    names = sorted(os.listdir(REFERENCE))
    v2 = {name for name, _ in named_spec("fashion_mnist_reference").points()}
    assert len(v2) == 21 and v2 <= set(names)  # study v3 adds points beside v2's
    for name in names:
        raw = raw_record(name)
        record = PointRecord.from_dict(raw)
        assert_written_back(raw, record.to_dict(), name)
        assert PointRecord.from_dict(record.to_dict()) == record
        with open(os.path.join(committed(name), records.HISTORY)) as f:
            history = json.load(f)
        for i, h in enumerate(history):
            scores = Scores.from_dict(h)
            assert_written_back(h, scores.to_dict(), f"{name} history[{i}]")
            assert Scores.from_dict(scores.to_dict()) == scores


def test_the_round_trip_check_catches_a_lost_value():
    with pytest.raises(AssertionError):
        assert_written_back({"a": {"b": 1.0}}, {"a": {"b": 1}})
    with pytest.raises(AssertionError):
        assert_written_back({"a": [1, 2]}, {"a": [1]})
    assert_written_back({"a": 1}, {"a": 1, "newer_field": None})


def test_the_reference_records_hold_what_they_say():
    record = PointRecord.from_dict(raw_record("bs0064_seed0"))
    assert (record.status, record.global_batch_size, record.seed) == ("done", 64, 0)
    assert record.images_seen == record.steps * 64 * 2  # n_dis 2
    assert isinstance(record.final, Scores) and record.final.step == record.steps
    assert len(record.replicates) == 2 and record.final.n_fake == 5000


def test_write_then_read_gives_the_same_record(tmp_path):
    record = PointRecord.from_dict(raw_record())
    records.write_record(str(tmp_path), record)
    assert records.read_record(str(tmp_path)) == record
    history = records.read_history(committed())
    records.write_history(str(tmp_path), history)
    assert records.read_history(str(tmp_path)) == history
    config = records.read_config(committed())
    records.write_config(str(tmp_path), config)
    assert records.read_config(str(tmp_path)) == config


@pytest.mark.parametrize("where,change,message", [
    ("top", {"no_such_field": 1}, r"unknown field\(s\) \['no_such_field'\]"),
    ("final", {"fidd": 1.0}, r"unknown field\(s\) \['final.fidd'\]"),
    ("final.protocol", {"clasifier": "x"}, r"unknown field\(s\) \['final.protocol.clasifier'\]"),
    ("top", {"steps": "1000"}, r"steps='1000' has the wrong type"),
    ("top", {"steps": True}, r"steps=True has the wrong type"),
    ("top", {"status": "running"}, r"status 'running' is not one of"),
    ("final", {"is_mean": None}, r"final.is_mean may not be null"),
])
def test_unknown_fields_and_wrong_types_are_rejected_by_name(where, change, message):
    raw = raw_record()
    target = raw
    if where != "top":
        for key in where.split("."):
            target = target[key]
    target.update(change)
    with pytest.raises(RecordError, match=message):
        PointRecord.from_dict(raw)


def test_a_missing_required_field_is_named():
    raw = raw_record()
    del raw["train_wall_time_s"]
    with pytest.raises(RecordError, match=r"missing field\(s\) \['train_wall_time_s'\]"):
        PointRecord.from_dict(raw)


def test_a_done_record_needs_its_final_scores():
    raw = dict(raw_record(), final=None)
    with pytest.raises(RecordError, match="a 'done' point needs its final scores"):
        PointRecord.from_dict(raw)


def test_paths_are_relative_to_the_point_directory(tmp_path):
    """A record names its generator relative to its own directory, so a moved (or committed)
    point still finds its weights."""
    for name in sorted(os.listdir(REFERENCE)):
        weights = raw_record(name)["generator_weights"]
        assert weights == records.GENERATOR and not os.path.isabs(weights)
    moved = tmp_path / "elsewhere" / "bs0064_seed0"
    shutil.copytree(committed(), moved)
    point = records.load_point(str(moved))
    assert point.generator_path == os.path.join(str(moved), "samples", "generator.npz")
    assert os.path.exists(point.generator_path)
    assert point.samples_path == os.path.join(str(moved), "samples", "samples.npz")


def test_load_points_reads_finished_points_in_name_order(tmp_path):
    points = records.load_points(os.path.dirname(REFERENCE))
    assert [os.path.basename(p.dir) for p in points] == sorted(os.listdir(REFERENCE))
    assert all(p.config.train.global_batch_size == p.record.global_batch_size for p in points)
    # an unfinished point (no metrics.json) and a missing points/ folder give nothing
    shutil.copytree(committed(), tmp_path / "points" / "bs0064_seed0")
    os.makedirs(tmp_path / "points" / "bs0512_seed0")
    assert [os.path.basename(p.dir) for p in records.load_points(str(tmp_path))] == [
        "bs0064_seed0"]
    assert records.load_points(str(tmp_path / "nothing")) == []


@pytest.mark.parametrize("content,logged", [
    ("{not json", "is corrupt"),
    ("null", "holds null"),
    ('{"status": "done"}', "does not hold a valid record"),
])
def test_a_file_that_does_not_parse_is_absent_and_logged(tmp_path, caplog, content, logged):
    (tmp_path / records.METRICS).write_text(content)
    with caplog.at_level(logging.WARNING):
        assert records.read_record(str(tmp_path)) is None
    assert logged in caplog.text and records.METRICS in caplog.text
    assert records.load_point(str(tmp_path)) is None


def test_missing_files_read_as_absent(tmp_path):
    assert records.read_record(str(tmp_path)) is None
    assert records.read_config(str(tmp_path)) is None
    assert records.read_history(str(tmp_path)) == []
    assert records.read_json(str(tmp_path / "none.json")) is None


def test_finite():
    assert records.finite(1) and records.finite(2.5)
    assert not any(records.finite(x) for x in (None, float("nan"), float("inf"), "1"))


def test_interruptions_accumulate_across_runs_and_default_to_none(tmp_path, caplog):
    assert records.read_interruptions(str(tmp_path)) == {"preempted_at": [], "resumed_from": []}
    records.add_interruption(str(tmp_path), "resumed_from", 2)  # after a SIGKILL at step 3
    records.add_interruption(str(tmp_path), "preempted_at", 5)
    records.add_interruption(str(tmp_path), "resumed_from", 5)
    seen = records.read_interruptions(str(tmp_path))
    assert seen == {"preempted_at": [5], "resumed_from": [2, 5]}
    record = PointRecord.from_dict({**raw_record(), **seen})
    assert (record.preempted_at, record.resumed_from) == ([5], [2, 5])
    (tmp_path / records.INTERRUPTIONS).write_text("[5")  # torn: ignored, logged
    with caplog.at_level(logging.WARNING):
        assert records.read_interruptions(str(tmp_path))["preempted_at"] == []
    assert "corrupt" in caplog.text


def test_cas_and_memorisation_scores_round_trip_in_a_point_record():
    from experiments.records import CasRecipe, CasScore, MemorisationScore, NearestPair
    recipe = CasRecipe()
    cas = CasScore(recipe=recipe, trained_on="generated", accuracy=0.61,
                   per_class_accuracy=[0.5] * 10, n_train=10_000, n_test=10_000,
                   train_accuracy_last_epoch=0.9, train_time_s=40.0, wall_time_s=50.0,
                   bn_mode="batch", step=1000)
    mem = MemorisationScore(
        space="pixels", classifier=None, classifier_version=None, n_generated=5000,
        n_test=10_000, n_train=60_000, percentile=5.0, threshold=3.9, fraction_closer=0.04,
        generated_median=7.5, test_median=6.9, closest=[NearestPair(3, 17, 2.5, 4)],
        seed=1234, bn_mode="batch", wall_time_s=20.0, step=1000)
    record = PointRecord.from_dict(raw_record()).replace(cas={recipe.key: cas},
                                                         memorisation={mem.key: mem})
    back = PointRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert back == record and back.cas[recipe.key].recipe.epochs == 3
    assert list(back.memorisation) == ["pixels/n5000/p5/seed1234/batch"]
    before = {k: v for k, v in raw_record().items() if k not in ("cas", "memorisation")}
    assert PointRecord.from_dict(before).cas == {}  # records from before: empty
