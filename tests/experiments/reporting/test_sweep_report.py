"""Sweep points, run files and the report, on synthetic records (no training needed)."""
import json
import math
import os

import numpy as np
import pytest
from fake_results import fake_point as _fake_point

from common import files
from experiments import config as c
from experiments import records
from experiments.reporting import report
from experiments.running.sweep import SweepSpec


def test_sweep_points_equal_steps_and_lr_scaling():
    base = c.preset("fashion_mnist", {"train.steps": 100})
    spec = SweepSpec(base, batch_sizes=(16, 64, 256), seeds=(0, 1), lr_scaling="sqrt")
    points = spec.points()
    assert [n for n, _ in points] == ["bs0016_seed0", "bs0064_seed0", "bs0256_seed0",
                                      "bs0016_seed1", "bs0064_seed1", "bs0256_seed1"]
    cfg = dict(points)["bs0256_seed1"]
    assert cfg.train.global_batch_size == 256 and cfg.train.seed == 1
    assert cfg.train.steps == 100
    assert math.isclose(cfg.train.g_lr, 2e-4 * 2.0)  # sqrt(256 / 64)
    assert math.isclose(dict(points)["bs0016_seed0"].train.d_lr, 2e-4 * 0.5)


def test_sweep_points_equal_images_budget():
    base = c.preset("fashion_mnist", {"train.steps": 100, "eval.every": 25})
    spec = SweepSpec(base, batch_sizes=(32, 64, 128), budget="equal_images")
    steps = {cfg.train.global_batch_size: cfg for _, cfg in spec.points()}
    assert {b: s.train.steps for b, s in steps.items()} == {32: 200, 64: 100, 128: 50}
    for b, cfg in steps.items():  # images seen are equal
        assert cfg.train.steps * b == 6400
        assert cfg.train.steps // cfg.eval.every == 4  # same number of evaluations


def test_sweep_rejects_bad_specs():
    base = c.preset("fashion_mnist", {"train.replicator": "cpu:4"})
    with pytest.raises(c.ConfigError, match="not divisible by the 4 replicas"):
        SweepSpec(base, batch_sizes=(8, 2))
    with pytest.raises(c.ConfigError, match="lr_scaling"):
        SweepSpec(base, lr_scaling="cubic")
    with pytest.raises(c.ConfigError, match="budget"):
        SweepSpec(base, budget="equal_time")


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


def test_report_tables_plots_and_comparison(tmp_path):
    root = str(tmp_path)
    for seed, jitter in ((0, 0.0), (1, 0.2)):
        for batch, is_mean, fid in ((16, 3.0, 80.0), (64, 4.0, 40.0), (512, 6.0, 20.0)):
            _fake_point(root, batch, seed, is_mean + jitter, fid + 10 * jitter)
    _fake_point(root, 128, 0, 0, 0, status="diverged")
    out = report.write_report(root)
    rows = {r["batch"]: r for r in out["rows"]}
    assert rows[64]["is_mean"] == pytest.approx(4.1)
    assert rows[64]["is_std"] == pytest.approx(np.std([4.0, 4.2], ddof=1))
    assert rows[512]["is_change_vs_64"] == pytest.approx(100 * (6.1 / 4.1 - 1))
    assert rows[512]["fid_change_vs_64"] == pytest.approx(100 * (21 / 41 - 1))
    assert rows[128]["diverged"] == 1 and rows[128]["is_mean"] is None
    md = (tmp_path / "report" / "table.md").read_text()
    assert "| 512 | 2 | 6.10 ± 0.14 |" in md and "+48.8%" in md
    assert "Protocol: fashion_mnist_classifier" in md and "500 generated vs 1000 real" in md
    assert "\\pm" in (tmp_path / "report" / "table.tex").read_text()
    assert (tmp_path / "report" / "table.csv").read_text().startswith("batch,")
    for name in ("is_fid_vs_batch", "curves_vs_steps", "curves_vs_images", "comparison"):
        for ext in ("png", "pdf"):
            assert (tmp_path / "report" / f"{name}.{ext}").stat().st_size > 1000


def test_one_seed_report_states_signal_and_noise(tmp_path):
    """One training seed: intervals come from evaluation seeds, and the verdict says so."""
    root = str(tmp_path)
    _fake_point(root, 64, 0, 4.0, 40.0, accuracy=0.5, replicates=(4.05, 3.95))
    _fake_point(root, 512, 0, 6.0, 20.0, accuracy=0.7, replicates=(6.05, 5.95))
    _fake_point(root, 128, 0, 5.0, 30.0, accuracy=0.6, replicates=(5.05, 4.95))
    out = report.write_report(root)
    rows = {r["batch"]: r for r in out["rows"]}
    assert rows[512]["is_ratio_ci"]["method"] == "evaluation resampling (one training seed)"
    assert rows[512]["is_ratio_ci"]["low"] > 1.4 and rows[512]["acc"] == pytest.approx(0.7)
    assert rows[64]["is_std"] == pytest.approx(np.std([4.0, 4.05, 3.95], ddof=1))
    verdicts = {v["metric"]: v for v in out["analysis"]["verdicts"]}
    assert verdicts["is"]["outcome"] == "reproduced"
    assert "evaluation noise only" in verdicts["is"]["text"]
    md = (tmp_path / "report" / "table.md").read_text()
    assert "## Signal and noise" in md and "paper: +50%" in md and "Rule:" in md
    assert "baseline" in md and "0.500" in md and "0.50 / 0.40" in md
    assert out["analysis"]["noise_floor"]["is"]["points"] == 3
    assert json.loads((tmp_path / "report" / "analysis.json").read_text())["target_batch"] == 512
    assert "is_ratio_low" in (tmp_path / "report" / "table.csv").read_text().splitlines()[0]


def test_other_bn_modes_are_reported_beside_the_main_one(tmp_path):
    root = str(tmp_path)
    _fake_point(root, 64, 0, 4.0, 40.0, accuracy=0.5)
    run = os.path.join(root, "points", "bs0064_seed0")
    record = records.read_record(run)
    moving = record.final.replace(is_mean=3.5, fid=45.0, accuracy=0.4,
                                  protocol=record.final.protocol.replace(bn_mode="moving"))
    records.write_record(run, record.replace(evaluations={"tiny/moving": moving}))
    out = report.write_report(root)
    assert out["rows"][0]["other_bn_modes"] == {
        "moving": dict(seeds=1, is_mean=3.5, fid=45.0, acc=0.4)}
    assert "| 64 | moving | 1 | 3.50 | 45.00 | 0.400 |" in out["markdown"]
