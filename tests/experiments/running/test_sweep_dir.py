"""A sweep directory holds one study: other settings are refused, more batch sizes, seeds or
a second arm extend it, and the record of its points only grows."""
import json
import os

import pytest

from experiments.config import SweepAxes
from experiments.configs import preset
from experiments.running import sweep_dir
from experiments.running.sweep import SweepSpec


def spec(steps=4, seeds=(0,), batch_sizes=(8, 16), arm="", budget="equal_steps",
         **overrides):
    base = preset("fashion_mnist", {"train.steps": steps, **overrides})
    return SweepSpec(base, SweepAxes(batch_sizes=batch_sizes, seeds=seeds, arm=arm,
                                     budget=budget)).to_dict()


def test_differences_name_the_settings_that_change_results():
    assert sweep_dir.differences(spec(), spec()) == []
    diff = sweep_dir.differences(spec(), spec(steps=6, **{"model.g_ch": 8}))
    assert diff == ["base.model.g_ch (recorded 32, now 8)", "base.train.steps (recorded 4, now 6)"]
    # other batch sizes or seeds, more or fewer, are other points of the same study
    assert sweep_dir.differences(spec(), spec(seeds=(0, 1), batch_sizes=(8, 16, 32))) == []
    assert sweep_dir.differences(spec(seeds=(0, 1)), spec(seeds=(3,), batch_sizes=(16,))) == []
    assert sweep_dir.differences(spec(), spec(budget="equal_images")) == [
        "budget (recorded 'equal_steps', now 'equal_images')"]
    # cadences and the replicator do not change results
    assert sweep_dir.differences(spec(), spec(**{"train.replicator": "cpu:2",
                                                 "eval.batch_size": 510,
                                                 "train.log_every": 1})) == [
        "base.eval.batch_size (recorded 512, now 510)"]


def test_a_sweep_json_from_before_arms_reads_as_its_grid_of_points():
    """sweep.json as v2 committed it: batch_sizes x seeds, no arm, no points."""
    old = spec(seeds=(0, 1))
    del old["arm"], old["points"]
    old.update(batch_sizes=[8, 16], seeds=[0, 1])
    assert sweep_dir.differences(old, spec()) == []
    merged = sweep_dir.merged(old, spec(seeds=(3,), batch_sizes=(16,)))
    assert merged["points"] == [[8, 0], [16, 0], [8, 1], [16, 1], [16, 3]]
    assert "batch_sizes" not in merged and merged["arm"] == ""


def test_a_sweep_json_from_before_a_new_config_field_still_matches():
    old = spec()
    del old["base"]["train"]["g_batch_multiplier"]  # a field added later, at its default
    assert sweep_dir.differences(old, spec()) == []


def test_claim_refuses_another_sweep_and_start_over_deletes_only_its_files(tmp_path):
    sweep_dir.claim(str(tmp_path), spec())
    sweep_dir.claim(str(tmp_path), spec(steps=9, arm="long"))
    for name in ("points/bs0008_seed0", "report", "notes"):
        os.makedirs(tmp_path / name)
    with pytest.raises(sweep_dir.SweepMismatchError, match="base.train.steps"):
        sweep_dir.claim(str(tmp_path), spec(steps=6))
    assert json.loads((tmp_path / "sweep.json").read_text()) == spec()  # untouched
    sweep_dir.claim(str(tmp_path), spec(steps=6), restart=True)  # every arm's files too
    assert sorted(os.listdir(tmp_path)) == ["notes", "sweep.json"]
    assert json.loads((tmp_path / "sweep.json").read_text())["base"]["train"]["steps"] == 6


def test_a_corrupt_sweep_json_is_replaced(tmp_path):
    (tmp_path / "sweep.json").write_text('{"base": ')
    sweep_dir.claim(str(tmp_path), spec())
    assert json.loads((tmp_path / "sweep.json").read_text()) == spec()


def test_more_seeds_and_a_second_arm_extend_the_directory(tmp_path):
    """Study v3 in v2's directory: seeds 3-5 at two batch sizes join the main arm's record;
    a control at another budget and length is its own arm, in its own file."""
    out = str(tmp_path)
    sweep_dir.claim(out, spec(batch_sizes=(8, 16, 32), seeds=(0, 1)))
    sweep_dir.claim(out, spec(batch_sizes=(8, 32), seeds=(3, 4)))
    recorded = json.loads((tmp_path / "sweep.json").read_text())
    assert recorded["points"] == [[8, 0], [16, 0], [32, 0], [8, 1], [16, 1], [32, 1],
                                  [8, 3], [32, 3], [8, 4], [32, 4]]
    sweep_dir.claim(out, spec(batch_sizes=(16,), seeds=(0,)))  # a subset: nothing forgotten
    assert json.loads((tmp_path / "sweep.json").read_text()) == recorded

    control = spec(steps=32, batch_sizes=(8,), budget="equal_images", arm="control")
    with pytest.raises(sweep_dir.SweepMismatchError, match="own --arm"):
        sweep_dir.claim(out, {**control, "arm": ""})  # as the main arm: another study
    sweep_dir.claim(out, control)
    assert json.loads((tmp_path / "sweep.control.json").read_text()) == control
    assert json.loads((tmp_path / "sweep.json").read_text()) == recorded  # untouched
    with pytest.raises(sweep_dir.SweepMismatchError, match="sweep.control.json differs"):
        sweep_dir.claim(out, spec(steps=16, batch_sizes=(8,), budget="equal_images",
                                  arm="control"))


def test_a_report_needs_a_sweeps_points(tmp_path):
    with pytest.raises(sweep_dir.NotASweepError, match="does not exist"):
        sweep_dir.require_points(str(tmp_path / "nowhere"))
    with pytest.raises(sweep_dir.NotASweepError, match="holds no points/"):
        sweep_dir.require_points(str(tmp_path))
    os.makedirs(tmp_path / "points")
    assert sweep_dir.require_points(str(tmp_path)) == str(tmp_path)
