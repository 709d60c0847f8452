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
    assert spec.arm == "equal_images" and spec.budget == "equal_images"
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


@pytest.mark.parametrize("name", ["v2", "more_seeds", "equal_images"])
def test_runs_record_the_fashion_mnist_experiment(name):
    assert named_spec("fashion_mnist_reference", name).base.preset == "fashion_mnist"
    assert name in configs.sweeps("fashion_mnist_reference")
