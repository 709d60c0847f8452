"""What a sweep hands the report, on synthetic records: each point's config (seed-major order,
learning rates scaled with the batch) and files written atomically, read back or refused."""
import json
import math
import os

import numpy as np
import pytest
from fake_results import fake_point

from common import files
from experiments import config as c
from experiments import configs, records
from experiments.config import SweepAxes
from experiments.running.sweep import SweepSpec


def test_sweep_points_equal_steps_and_lr_scaling():
    base = configs.preset("fashion_mnist", {"train.steps": 100})
    spec = SweepSpec(base, SweepAxes(batch_sizes=(16, 64, 256), seeds=(0, 1), lr_scaling="sqrt"))
    points = dict(spec.points())
    assert list(points) == ["bs0016_seed0", "bs0064_seed0", "bs0256_seed0",
                            "bs0016_seed1", "bs0064_seed1", "bs0256_seed1"]
    cfg = points["bs0256_seed1"].train
    assert (cfg.global_batch_size, cfg.seed, cfg.steps) == (256, 1, 100)
    assert math.isclose(cfg.g_lr, 2e-4 * 2.0)  # sqrt(256 / 64)
    assert math.isclose(points["bs0016_seed0"].train.d_lr, 2e-4 * 0.5)
    with pytest.raises(c.ConfigError, match="not divisible by the 4 replicas"):
        SweepSpec(configs.preset("fashion_mnist", {"train.replicator": "cpu:4"}),
                  SweepAxes(batch_sizes=(8, 2)))


def test_atomic_writes_and_unreadable_files(tmp_path):
    fake_point(str(tmp_path), 64, 0, 4.0, 40.0)
    run = tmp_path / "points" / "bs0064_seed0"
    files.atomic_write_json(str(tmp_path / "x.json"), {"x": np.float32(1.5)})
    assert json.loads((tmp_path / "x.json").read_text())["x"] == 1.5
    assert not [p for p in os.listdir(run) if p.startswith(".tmp-")]
    good = (run / records.METRICS).read_text()
    (run / records.METRICS).write_text('{"status": "running"}')
    assert records.read_record(str(run)) is None
    (run / records.METRICS).write_text(good)
    assert records.load_point(str(run)) is not None
    (run / records.CONFIG).write_text("{")
    assert records.load_point(str(run)) is None
