"""The committed points made before records kept their environment carry the one the project's
history states for them (scripts/reconstruct_environments.py), marked reconstructed, with a
note naming the sources; rerunning the script changes nothing."""
import importlib.util
import json
import os
import shutil

import pytest

from experiments import records
from experiments.records import PointRecord

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(ROOT, "results", "fashion_mnist")
NAMES = sorted(os.listdir(os.path.join(REFERENCE, "points")))


def _script():
    path = os.path.join(ROOT, "scripts", "reconstruct_environments.py")
    spec = importlib.util.spec_from_file_location("reconstruct_environments", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(name) -> PointRecord:
    return records.read_record(os.path.join(REFERENCE, "points", name))


def test_every_committed_point_has_an_environment_and_reconstructed_ones_say_why():
    assert len(NAMES) >= 56
    for name in NAMES:
        envs = _record(name).environments
        assert envs, name
        for env in envs:
            if env.source == "reconstructed":
                assert env.note and "not measured" in env.note, name
                assert env.packages["tensorflow"] == "2.21.0", name  # issue 41's statement
                assert env.packages["keras"] == "3.15.1", name
                assert env.python is None and env.suite_dirty is None, name  # never stated
                assert env.suite_commit is None or len(env.suite_commit) == 40, name
                # an unknown CPU says so instead of guessing
                assert env.cpu_model is not None or "not stated" in env.note, name


def test_the_history_table_covers_exactly_the_committed_points_and_they_match_it():
    script = _script()
    assert set(script.POINTS) == set(NAMES)
    assert script.main([REFERENCE, "--check"]) == 0  # rerunning it would change no file


def test_what_the_history_states_is_what_the_records_hold():
    """Known answers from the sources: the lr probe's commit message names the AMX Xeon, the
    equal-images control ran on the AMD EPYC (docs/study.md), stop 16 puts v2's seed 2 at
    batch 64 on a Xeon, and no source names the CPU of v2's first sitting."""
    probe = _record("bs0512_seed0_lr_probe").environments[0]
    assert probe.cpu_model == "Intel Xeon" and {"amx_bf16", "amx_tile"} <= set(probe.cpu_flags)
    assert "49260ff" in probe.note and "stop 39" in probe.note
    assert probe.suite_commit.startswith("22fb18b")  # the parent of 49260ff
    control = _record("bs0064_seed1_equal_images").environments[0]
    assert control.cpu_model == "AMD EPYC" and "amx_tile" not in control.cpu_flags
    assert "avx512_bf16" in control.cpu_flags
    assert _record("bs0064_seed2").environments[0].cpu_model == "Intel Xeon"
    first = _record("bs0064_seed0").environments[0]
    assert first.cpu_model is None and "not stated" in first.note
    unstated = _record("bs0512_seed0_constant_lr").environments[0]
    assert unstated.cpu_model is None and unstated.cpu_flags == []
    for name in NAMES:
        env = _record(name).environments[0]
        assert env.devices == ["/job:localhost/replica:0/task:0/device:CPU:0"]
        assert env.replicator == "default"


def test_the_script_adds_only_the_environments_and_leaves_measured_ones_alone(tmp_path):
    script = _script()
    points = tmp_path / "points"
    for name in ("bs0064_seed0", "bs0512_seed0_lr_probe"):
        shutil.copytree(os.path.join(REFERENCE, "points", name), points / name,
                        ignore=shutil.ignore_patterns("samples"))
        path = points / name / records.METRICS
        raw = json.loads(path.read_text())
        raw.pop("environments")
        path.write_text(json.dumps(raw))
    measured = json.loads((points / "bs0512_seed0_lr_probe" / records.METRICS).read_text())
    measured["environments"] = [{**_record("bs0064_seed0").environments[0].to_dict(),
                                 "source": "measured", "note": None}]
    (points / "bs0512_seed0_lr_probe" / records.METRICS).write_text(json.dumps(measured))
    assert script.main([str(tmp_path), "--check"]) == 1  # one file would change
    assert script.main([str(tmp_path)]) == 0
    committed = open(os.path.join(REFERENCE, "points", "bs0064_seed0", records.METRICS)).read()
    assert (points / "bs0064_seed0" / records.METRICS).read_text() == committed
    kept = json.loads((points / "bs0512_seed0_lr_probe" / records.METRICS).read_text())
    assert kept == measured  # a measured environment is never replaced
    assert script.main([str(tmp_path), "--check"]) == 0


def test_a_point_the_table_does_not_know_is_refused(tmp_path):
    script = _script()
    shutil.copytree(os.path.join(REFERENCE, "points", "bs0064_seed0"),
                    tmp_path / "points" / "bs9999_seed0", ignore=shutil.ignore_patterns("*.npz"))
    with pytest.raises(SystemExit, match="bs9999_seed0: not in this script's table"):
        script.main([str(tmp_path)])
