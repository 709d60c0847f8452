"""Output directories: one writer at a time (flock), and a sweep directory holds one study."""
import json
import os
import subprocess
import sys

import pytest

from experiments import config as c
from experiments.running import lock, sweep_dir
from experiments.running.sweep import SweepSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TRY_LOCK = ("import sys; from experiments.running import lock; "
            "lock.lock_dir(sys.argv[1], 'second'); print('locked')")


def try_lock_elsewhere(directory):
    return subprocess.run([sys.executable, "-c", TRY_LOCK, str(directory)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_held_lock_names_its_holder_and_dies_with_it(tmp_path):
    lock.lock_dir(str(tmp_path), "python -m experiments sweep --out x")
    try:
        assert lock.lock_dir(str(tmp_path)) == str(tmp_path / ".lock")  # re-entrant
        proc = try_lock_elsewhere(tmp_path)
        assert proc.returncode != 0
        assert f"in use by process {os.getpid()} (python -m experiments sweep --out x)" \
            in proc.stderr
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()
    finally:
        lock.unlock_dir(str(tmp_path))
    assert try_lock_elsewhere(tmp_path).stdout.strip() == "locked"  # released


def test_a_lock_file_left_by_a_dead_process_does_not_block(tmp_path):
    (tmp_path / ".lock").write_text(json.dumps({"pid": 999999, "command": "killed"}))
    assert try_lock_elsewhere(tmp_path).stdout.strip() == "locked"


def spec(steps=4, seeds=(0,), batch_sizes=(8, 16), **overrides):
    base = c.preset("fashion_mnist", {"train.steps": steps, **overrides})
    return SweepSpec(base, batch_sizes=batch_sizes, seeds=seeds).to_dict()


def test_differences_name_the_fields_that_change_results():
    assert sweep_dir.differences(spec(), spec()) == []
    diff = sweep_dir.differences(spec(), spec(steps=6, **{"model.g_ch": 8}))
    assert diff == ["base.model.g_ch (recorded 32, now 8)", "base.train.steps (recorded 4, now 6)"]
    # more seeds or batch sizes extend the study; fewer, or other, do not
    assert sweep_dir.differences(spec(), spec(seeds=(0, 1), batch_sizes=(8, 16, 32))) == []
    assert sweep_dir.differences(spec(seeds=(0, 1)), spec()) == [
        "seeds (recorded [0, 1], now [0])"]
    # cadences and the replicator do not change results
    assert sweep_dir.differences(spec(), spec(**{"train.replicator": "cpu:2",
                                                 "eval.batch_size": 510,
                                                 "train.log_every": 1})) == [
        "base.eval.batch_size (recorded 512, now 510)"]


def test_a_sweep_json_from_before_a_new_config_field_still_matches():
    old = spec()
    del old["base"]["train"]["g_batch_multiplier"]  # a field added later, at its default
    assert sweep_dir.differences(old, spec()) == []


def test_claim_refuses_another_sweep_and_start_over_deletes_only_its_files(tmp_path):
    sweep_dir.claim(str(tmp_path), spec())
    for name in ("points/bs0008_seed0", "report", "notes"):
        os.makedirs(tmp_path / name)
    with pytest.raises(sweep_dir.SweepMismatchError, match="base.train.steps"):
        sweep_dir.claim(str(tmp_path), spec(steps=6))
    assert json.loads((tmp_path / "sweep.json").read_text()) == spec()  # untouched
    sweep_dir.claim(str(tmp_path), spec(steps=6), restart=True)
    assert sorted(os.listdir(tmp_path)) == ["notes", "sweep.json"]
    assert json.loads((tmp_path / "sweep.json").read_text())["base"]["train"]["steps"] == 6


def test_a_corrupt_sweep_json_is_replaced(tmp_path):
    (tmp_path / "sweep.json").write_text('{"base": ')
    sweep_dir.claim(str(tmp_path), spec())
    assert json.loads((tmp_path / "sweep.json").read_text()) == spec()
