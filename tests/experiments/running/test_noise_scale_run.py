"""The noise-scale command's logic: its config keeps the experiment's schedule, its text states
the estimate and interval, a short run measures and resumes, and a sweep point records B_simple
at every evaluation and its last-window summary."""
import json
import os

import pytest
from synthetic_data import synthetic_input_fn

import replication
from experiments import records
from experiments.config import ConfigError
from experiments.configs import preset
from experiments.records import Scores
from experiments.running import lock, noise_scale_run, point
from sngan.sampling import Sampler

TINY = {"model.g_ch": 8, "model.d_ch": 8, "model.z_dim": 16, "train.global_batch_size": 8,
        "train.n_dis": 1, "train.checkpoint_every": 2, "train.log_every": 100,
        "train.summary_every": 100, "train.noise_scale_every": 1, "eval.batch_size": 8}


def test_run_config_keeps_the_schedule_and_stops_early():
    cfg = noise_scale_run.run_config("fashion_mnist_reference", {"train.steps": 250,
                                                             "train.global_batch_size": 512}, 250)
    assert (cfg.train.steps, cfg.train.lr_decay_start) == (1000, 500)  # the reference schedule
    assert cfg.train.global_batch_size == 512
    longer = noise_scale_run.run_config("fashion_mnist", {}, 300)
    assert longer.train.steps == 300  # the preset's 200-step schedule stretched to the run
    assert longer.train.noise_scale_every == noise_scale_run.MEASURE_EVERY  # measures more often
    with pytest.raises(ConfigError, match="noise_scale_every > 0"):
        noise_scale_run.run_config("fashion_mnist", {"train.noise_scale_every": 0}, 100)
    with pytest.raises(ConfigError, match="fewer than 2 measurements"):
        noise_scale_run.run_config("fashion_mnist", {"train.noise_scale_every": 10}, 19)


def estimate(b, low, high, mean=None, std=None):
    return dict(measurements=12, window_start=130, b_simple=b, ci_low=low, ci_high=high,
                ema_mean=mean, ema_std=std)


def test_describe_states_estimate_interval_and_prediction():
    result = dict(preset="fashion_mnist", global_batch_size=64, steps=250, replicas=1,
                  diverged_at=None,
                  noise_scale=dict(every=10, source="2 slices of the batch",
                                   d=estimate(21.4, 15.2, 30.9, 22.0, 3.0),
                                   g=estimate(None, None, None)))
    text = noise_scale_run.describe(result)
    assert "batch 64, 250 steps" in text
    assert "last 12 measurements (from step 130), every 10 steps" in text
    assert "B_simple(D) = 21  [95% CI 15, 31], smoothed 22 ± 3; predicted critical batch ~ 16" \
        in text
    assert "B_simple(G): undefined" in text
    # the trade-off D's 21.4 implies: at batch 8, S = S_min (1 + 21.4/8) = 3.675 S_min and
    # E = E_min (1 + 8/21.4) = 1.37 E_min (printed to 2 places); G has no estimate, so no column
    assert "  batch | D: steps/S_min  images/E_min" in text
    assert "      8 |          3.67          1.37" in text
    assert "   4096 |          1.01        192.40" in text
    result["noise_scale"]["g"] = estimate(300.0, 120.0, None)
    assert "B_simple(G) = 300  [95% CI 120, unbounded]; predicted critical batch ~ 256" \
        in noise_scale_run.describe(result)
    assert "no measurement" in noise_scale_run.describe(dict(result, noise_scale=None))


def test_the_trade_off_is_mccandlish_s_and_e_with_b_noise_as_b_crit():
    rows = dict((b, (s, e)) for b, s, e in noise_scale_run.trade_off(64.0))
    assert rows[64] == (2.0, 2.0)  # at B = B_crit both are twice their minimum
    assert rows[8] == (9.0, 1.125) and rows[512] == (1.125, 9.0)
    for s, e in rows.values():
        assert (s - 1) * (e - 1) == pytest.approx(1.0)


@pytest.fixture
def synthetic(monkeypatch):
    monkeypatch.setattr(point, "training_input_fn",
                        lambda c: synthetic_input_fn(c.train.global_batch_size))


@pytest.mark.long  # two tiny trainings
def test_a_short_run_measures_both_players_and_resumes(tmp_path, synthetic):
    cfg = noise_scale_run.run_config("fashion_mnist", dict(TINY), 4)
    replicator = replication.make_replicator("default")
    out = str(tmp_path / "run")
    first = noise_scale_run.run(cfg, 4, out, "python -m experiments noise-scale --steps 4")
    with open(os.path.join(out, lock.LOCK_FILE)) as f:  # owned by this process while it runs
        assert json.load(f)["command"] == "python -m experiments noise-scale --steps 4"
    assert first["steps"] == 4 and first["series"]["d"]["steps"] == [1, 2, 3, 4]
    ns = first["noise_scale"]
    assert ns["d"]["measurements"] == 2 and ns["d"]["window_start"] == 3
    assert ns["batches"] == {"d": [4, 8], "g": [4, 8]} and ns["source"].startswith("2 slices")
    cfg6 = noise_scale_run.run_config("fashion_mnist", dict(TINY), 6)
    resumed = noise_scale_run.measure(cfg6.replace(train=cfg.train), 6, out, replicator)
    assert resumed["series"]["d"]["steps"] == [1, 2, 3, 4, 5, 6]
    assert resumed["series"]["d"]["g2"][:4] == first["series"]["d"]["g2"]
    path = str(tmp_path / "bs0008.json")
    noise_scale_run.save(path, resumed, "python -m experiments noise-scale --steps 6")
    with open(path) as f:
        saved = json.load(f)
    assert saved["command"].endswith("--steps 6") and saved["noise_scale"] == \
        resumed["noise_scale"]


class Evaluator:
    def score(self, generator, replicator, step, images_seen=None, eval_seed=None):
        protocol = records.read_record(os.path.join(
            os.path.dirname(__file__), "..", "..", "..", "results", "fashion_mnist", "points",
            "bs0008_seed0")).final.protocol
        return Scores(is_mean=1.0, is_std=0.0, fid=1.0, kid_mean=0.0, kid_std=0.0, n_fake=8,
                      n_real=8, protocol=protocol, step=step, images_seen=images_seen)

    def sampler_for(self, generator, replicator):
        return Sampler(generator, replicator, 16, 10)


@pytest.mark.long  # a tiny training
def test_a_point_records_b_simple_at_each_evaluation_and_its_window(tmp_path, synthetic):
    cfg = preset("fashion_mnist", {**TINY, "train.steps": 4, "eval.every": 2,
                                   "eval.replicates": 1})
    run = str(tmp_path / "bs0008_seed0")
    record = point.run_point(cfg, run, replication.make_replicator("default"), Evaluator())
    history = records.read_history(run)
    assert [h.step for h in history] == [2, 4]
    series = records.read_noise_series(run)["series"]
    assert series["d"]["steps"] == [1, 2, 3, 4]
    # the evaluation at step s holds the smoothed B_simple after the measurement at s
    assert [h.b_simple_d for h in history] == [series["d"]["b_simple"][i] for i in (1, 3)]
    assert [h.b_simple_g for h in history] == [series["g"]["b_simple"][i] for i in (1, 3)]
    ns = record.noise_scale
    assert "1812.06162" in ns.estimator and ns.every == 1 and ns.ema_decay == 0.9
    assert ns.d.measurements == 2 and ns.g.window_start == 3
    assert records.read_record(run).noise_scale == ns  # the JSON round trip
