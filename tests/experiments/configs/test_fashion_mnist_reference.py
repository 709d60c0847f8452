"""The committed reference run's config: its v2 sweep is exactly what results/fashion_mnist
holds, and its study-v3 sweeps extend that directory without touching a v2 point."""
import json
import os

import pytest

from experiments import configs, records
from experiments.running import run_dir, sweep_dir
from experiments.running.sweep import named_spec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
RESULTS = os.path.join(ROOT, "results", "fashion_mnist")


def test_v2_reproduces_every_committed_point_config():
    spec = named_spec("fashion_mnist_reference")
    names = [name for name, _ in spec.points()]
    assert len(names) == 21
    for name, cfg in spec.points():
        point = os.path.join(RESULTS, "points", name)
        # as a sweep reads it (fields added since at their defaults): the same config, so the
        # sweep skips the point as finished instead of refusing or retraining it. v2 ran before
        # train.noise_scale_every existed, so it measured nothing: its record reads back with
        # today's default, which the reference config turns off
        committed = records.read_config(point)
        assert committed.train.noise_scale_every == 25 and cfg.train.noise_scale_every == 0
        assert committed.with_overrides({"train.noise_scale_every": 0}) == cfg, name
        assert run_dir.finished_record(cfg, point).status == "done"
    with open(os.path.join(RESULTS, "sweep.json")) as f:
        assert sweep_dir.differences(json.load(f), spec.to_dict()) == []


def test_more_seeds_extend_v2_at_64_and_512_with_its_settings():
    spec = named_spec("fashion_mnist_reference", "more_seeds")
    assert [n for n, _ in spec.points()] == [
        "bs0064_seed3", "bs0512_seed3", "bs0064_seed4", "bs0512_seed4", "bs0064_seed5",
        "bs0512_seed5"]
    v2 = dict(named_spec("fashion_mnist_reference").points())
    for name, cfg in spec.points():
        assert cfg.with_overrides({"train.seed": 0}) == v2[name[:-1] + "0"]  # but the seed
    with open(os.path.join(RESULTS, "sweep.json")) as f:
        assert sweep_dir.differences(json.load(f), spec.to_dict()) == []


def test_the_equal_images_control():
    spec = named_spec("fashion_mnist_reference", "equal_images")
    assert spec.axes.arm == "equal_images" and spec.axes.budget == "equal_images"
    points = dict(spec.points())
    assert list(points) == [f"bs0064_seed{s}_equal_images" for s in (0, 1, 2)]
    for seed, cfg in enumerate(points.values()):
        t = cfg.train
        assert (t.global_batch_size, t.seed, t.steps, t.lr_decay_start) == (64, seed, 8000,
                                                                            4000)
        # the images batch 512 sees in v2's 1,000 steps
        assert t.steps * t.global_batch_size == 1000 * 512
        assert (cfg.eval.every, cfg.eval.replicates) == (1000, 3)
    # batch 512 in this arm would be v2's point: equal images at 1,000 steps
    assert spec.steps_for(512) == 1000


def test_the_time_to_target_arm_runs_each_batch_its_own_steps_at_constant_lr():
    spec = named_spec("fashion_mnist_reference", "constant_lr")
    points = dict(spec.points())
    assert len(points) == 18 and spec.axes.arm == "constant_lr"
    steps = {}
    for name, cfg in points.items():
        t = cfg.train
        assert name == f"bs{t.global_batch_size:04d}_seed{t.seed}_constant_lr"
        assert t.lr_decay_start is None and t.g_lr == t.d_lr == 2e-4
        assert (t.precision, t.noise_scale_every, cfg.eval.every) == ("bfloat16", 25, 100)
        steps[t.global_batch_size] = t.steps
    assert steps == {16: 8000, 32: 4000, 64: 3000, 128: 2400, 256: 2000, 512: 2000}
    # the same run as v2's but for the schedule, steps, cadence and precision
    v2 = dict(named_spec("fashion_mnist_reference").points())["bs0064_seed1"]
    assert points["bs0064_seed1_constant_lr"].with_overrides({
        "train.lr_decay_start": 500, "train.steps": 1000, "train.precision": "float32",
        "train.noise_scale_every": 0, "eval.every": 200}) == v2
    assert spec.to_dict()["steps_by_batch"]["512"] == 2000


def test_the_lr_probe_scales_both_players_by_sqrt_8_at_batch_512():
    spec = named_spec("fashion_mnist_reference", "lr_probe")
    points = dict(spec.points())
    assert list(points) == ["bs0512_seed0_lr_probe", "bs0512_seed1_lr_probe"]
    ref = dict(named_spec("fashion_mnist_reference", "constant_lr").points())
    for name, cfg in points.items():
        twin = ref[name.replace("lr_probe", "constant_lr")]
        assert cfg.train.g_lr == pytest.approx(2e-4 * 8 ** 0.5) == cfg.train.d_lr
        assert cfg.with_overrides({"train.g_lr": 2e-4, "train.d_lr": 2e-4}) == twin


@pytest.mark.parametrize("name", ["v2", "more_seeds", "equal_images", "constant_lr",
                                  "lr_probe"])
def test_runs_record_the_fashion_mnist_experiment(name):
    assert named_spec("fashion_mnist_reference", name).base.preset == "fashion_mnist"
    assert name in configs.sweeps("fashion_mnist_reference")
