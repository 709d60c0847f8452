"""The sweep's points: names, per-point configs under both budgets, named sweeps, and a real
tiny sweep extended in place with more seeds and a second arm (nothing finished is redone)."""
import json
import os

import pytest

from experiments import records
from experiments.cli import main
from experiments.config import SweepAxes
from experiments.configs import preset
from experiments.running.sweep import SweepSpec, named_spec


def test_point_names_and_configs_under_equal_images():
    base = preset("fashion_mnist", {"train.steps": 800, "train.lr_decay_start": 400,
                                    "eval.every": 100})
    spec = SweepSpec(base, SweepAxes(batch_sizes=(64, 512), seeds=(0, 1),
                                     budget="equal_images", arm="control"))
    points = dict(spec.points())
    assert list(points) == ["bs0064_seed0_control", "bs0512_seed0_control",
                            "bs0064_seed1_control", "bs0512_seed1_control"]
    b512 = points["bs0512_seed1_control"].train
    assert (b512.steps, b512.lr_decay_start, b512.seed) == (100, 50, 1)  # 800 * 64 / 512
    assert points["bs0512_seed1_control"].eval.every == 12  # 8 evaluations, as at batch 64
    assert spec.to_dict()["points"] == [[64, 0], [512, 0], [64, 1], [512, 1]]
    assert SweepSpec(base, SweepAxes(batch_sizes=(64,))).point_name(64, 3) == "bs0064_seed3"


def test_steps_by_batch_gives_each_batch_its_steps_and_one_evaluation_cadence():
    base = preset("fashion_mnist", {"train.steps": 800, "eval.every": 100})
    spec = SweepSpec(base, SweepAxes(batch_sizes=(16, 512),
                                     steps_by_batch=((16, 4000), (512, 300)), arm="ttt"))
    points = dict(spec.points())
    assert [(c.train.steps, c.eval.every) for c in points.values()] == [(4000, 100),
                                                                        (300, 100)]
    assert spec.to_dict()["steps_by_batch"] == {"16": 4000, "512": 300}
    assert "4000/300 (per batch size) G steps" in spec.describe("out")
    # a subset of the batch sizes (--batch-sizes) keeps the arm's recorded steps
    sub = SweepSpec(base, SweepAxes(batch_sizes=(512,), steps_by_batch=((16, 4000), (512, 300))))
    assert sub.to_dict()["steps_by_batch"] == spec.to_dict()["steps_by_batch"]
    assert "steps_by_batch" not in SweepSpec(base, SweepAxes(batch_sizes=(16,))).to_dict()


def test_named_spec_lets_flags_and_overrides_win():
    spec = named_spec("fashion_mnist_reference", "equal_images", {"seeds": (4,)},
                      {"train.steps": 16, "train.lr_decay_start": 8, "eval.every": 4})
    (name, cfg), = spec.points()
    assert name == "bs0064_seed4_equal_images"
    assert (cfg.train.steps, cfg.train.lr_decay_start, cfg.eval.every) == (16, 8, 4)


TINY = ["--protocol", "tiny", "--set", "model.g_ch=8", "--set", "model.d_ch=8",
        "--set", "eval.every=0", "--set", "eval.replicates=1",
        "--set", "train.checkpoint_every=2", "--no-calibration"]


def _sweep(out, *argv):
    assert main(["sweep", *TINY, "--out", str(out), *argv]) == 0


@pytest.mark.long
def test_a_sweep_directory_takes_more_seeds_and_a_second_arm(tmp_path, capsys):
    out = tmp_path / "study"
    _sweep(out, "--batch-sizes", "8,16", "--seeds", "0", "--steps", "2")
    finished = {n: (out / "points" / n / "metrics.json").read_text()
                for n in ("bs0008_seed0", "bs0016_seed0")}
    capsys.readouterr()
    # more seeds at one batch size, with the same settings: joins the main arm
    _sweep(out, "--batch-sizes", "16", "--seeds", "0,1", "--steps", "2")
    assert "bs0016_seed0: finished earlier" in capsys.readouterr().out
    # an equal-images control, its own arm (no name collision): --steps is the batch-64
    # budget, so batch 8 trains 8x as many steps
    _sweep(out, "--batch-sizes", "8", "--seeds", "0", "--steps", "1", "--budget",
           "equal_images", "--arm", "equal_images")
    assert sorted(os.listdir(out / "points")) == [
        "bs0008_seed0", "bs0008_seed0_equal_images", "bs0016_seed0", "bs0016_seed1"]
    for name, text in finished.items():  # finished points are never redone or touched
        assert (out / "points" / name / "metrics.json").read_text() == text
    budgets = {p.record.point: (p.record.sweep_budget, p.record.steps)
               for p in records.load_points(str(out))}
    assert budgets == {"bs0008_seed0": ("equal_steps", 2), "bs0016_seed0": ("equal_steps", 2),
                       "bs0016_seed1": ("equal_steps", 2),
                       "bs0008_seed0_equal_images": ("equal_images", 8)}
    main_arm = json.loads((out / "sweep.json").read_text())
    assert main_arm["points"] == [[8, 0], [16, 0], [16, 1]] and main_arm["arm"] == ""
    control = json.loads((out / "sweep.equal_images.json").read_text())
    assert (control["points"], control["budget"]) == ([[8, 0]], "equal_images")
    # the main arm at another budget is another study: refused, nothing written
    assert main(["sweep", *TINY, "--out", str(out), "--batch-sizes", "8", "--steps", "4",
                 "--budget", "equal_images"]) == 2
    err = capsys.readouterr().err
    assert "sweep.json differs in" in err
    assert "budget (recorded 'equal_steps', now 'equal_images')" in err
