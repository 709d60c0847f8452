"""Sweep points and run files on synthetic records (no training needed); the report's own
tests are in test_report.py."""
import json
import math
import os

import numpy as np
import pytest
from fake_results import fake_point as _fake_point

from common import files
from experiments import config as c
from experiments import configs, records
from experiments.config import SweepAxes
from experiments.running.sweep import SweepSpec


def test_sweep_points_equal_steps_and_lr_scaling():
    base = configs.preset("fashion_mnist", {"train.steps": 100})
    spec = SweepSpec(base, SweepAxes(batch_sizes=(16, 64, 256), seeds=(0, 1), lr_scaling="sqrt"))
    points = spec.points()
    assert [n for n, _ in points] == ["bs0016_seed0", "bs0064_seed0", "bs0256_seed0",
                                      "bs0016_seed1", "bs0064_seed1", "bs0256_seed1"]
    cfg = dict(points)["bs0256_seed1"]
    assert cfg.train.global_batch_size == 256 and cfg.train.seed == 1
    assert cfg.train.steps == 100
    assert math.isclose(cfg.train.g_lr, 2e-4 * 2.0)  # sqrt(256 / 64)
    assert math.isclose(dict(points)["bs0016_seed0"].train.d_lr, 2e-4 * 0.5)


def test_sweep_points_equal_images_budget():
    base = configs.preset("fashion_mnist", {"train.steps": 100, "eval.every": 25})
    spec = SweepSpec(base, SweepAxes(batch_sizes=(32, 64, 128), budget="equal_images"))
    steps = {cfg.train.global_batch_size: cfg for _, cfg in spec.points()}
    assert {b: s.train.steps for b, s in steps.items()} == {32: 200, 64: 100, 128: 50}
    for b, cfg in steps.items():  # images seen are equal
        assert cfg.train.steps * b == 6400
        assert cfg.train.steps // cfg.eval.every == 4  # same number of evaluations


def test_sweep_rejects_bad_specs():
    base = configs.preset("fashion_mnist", {"train.replicator": "cpu:4"})
    with pytest.raises(c.ConfigError, match="not divisible by the 4 replicas"):
        SweepSpec(base, SweepAxes(batch_sizes=(8, 2)))
    with pytest.raises(c.ConfigError, match="lr_scaling"):
        SweepSpec(base, SweepAxes(batch_sizes=(8,), lr_scaling="cubic"))
    with pytest.raises(c.ConfigError, match="budget"):
        SweepSpec(base, SweepAxes(batch_sizes=(8,), budget="equal_time"))


def test_atomic_write_and_corrupt_metrics(tmp_path, caplog):
    _fake_point(str(tmp_path), 64, 0, 4.0, 40.0)
    run = tmp_path / "points" / "bs0064_seed0"
    path = run / records.METRICS
    files.atomic_write_json(str(tmp_path / "x.json"), {"x": np.float32(1.5)})
    assert json.loads((tmp_path / "x.json").read_text())["x"] == 1.5
    assert records.read_record(str(run)).status == "done"
    assert not [p for p in os.listdir(run) if p.startswith(".tmp-")]
    good = path.read_text()
    path.write_text('{"status": "do')  # a torn write from elsewhere
    assert records.read_record(str(run)) is None
    assert "corrupt" in caplog.text and "recomputed" in caplog.text
    for bad in ('{"status": "running"}', "null", good.replace('"seed"', '"sed"')):
        path.write_text(bad)
        assert records.read_record(str(run)) is None, bad
    path.write_text(good)
    (run / records.CONFIG).write_text("{")
    assert records.load_point(str(run)) is None


def test_records_round_trip_through_json(tmp_path):
    _fake_point(str(tmp_path), 64, 0, 4.0, 40.0)
    point = records.load_points(str(tmp_path))[0]
    assert records.PointRecord.from_dict(json.loads(json.dumps(point.record.to_dict()))) \
        == point.record
    assert point.history[-1] == point.record.final
    assert point.config.train.global_batch_size == 64
