"""The sweep directory described once: its arms (from the sweep files and the points' records),
the saved noise-scale runs as typed records, and malformed files reported with their path."""
import json
import logging
import os
import shutil

from experiments import records, sweep_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMITTED = os.path.join(ROOT, "results", "fashion_mnist")


def test_committed_points_by_arm_match_their_sweep_files():
    by_arm = sweep_files.points_by_arm(COMMITTED)
    specs = sweep_files.read_sweep_files(COMMITTED)
    assert sorted(by_arm) == sorted(specs) == ["", "bfloat16", "constant_lr", "equal_images",
                                              "lr_probe"]
    for arm, points in by_arm.items():
        assert {(p.record.global_batch_size, p.record.seed) for p in points} \
            <= {tuple(bs) for bs in specs[arm].points}
        assert all(os.path.basename(p.dir) == sweep_files.point_name(
            p.record.global_batch_size, p.record.seed, arm) for p in points)
    assert sorted(a for a, s in specs.items() if s.time_to_target) == ["constant_lr",
                                                                      "lr_probe"]


def test_a_stored_arm_wins_over_the_name(tmp_path):
    src = os.path.join(COMMITTED, "points", "bs0064_seed0")
    dst = tmp_path / "points" / "bs0064_seed0"
    shutil.copytree(src, dst)
    record = records.read_record(str(dst))
    assert record.arm is None  # committed before records kept it: derived when loading
    assert records.load_point(str(dst)).record.arm == ""
    records.write_record(str(dst), record.replace(arm="renamed"))
    assert records.load_point(str(dst)).record.arm == "renamed"


def test_committed_noise_scale_runs_are_typed():
    runs = dict(sweep_files.read_noise_scale_runs(COMMITTED))
    assert sorted(runs) == ["bs0064.json", "bs0512.json"]
    assert runs["bs0064.json"].global_batch_size == 64
    assert round(runs["bs0064.json"].noise_scale.g.b_simple) == 57
    coupling = dict(sweep_files.read_noise_scale_runs(COMMITTED, "coupling"))
    assert {n: r.bn_cross_replica for n, r in coupling.items()} == {
        "bs0064_cpu2_local_bn.json": False, "bs0064_cpu2_shared_bn.json": True,
        "bs0064_slices_shared_bn.json": True}


def test_a_malformed_file_is_reported_with_its_path(tmp_path, caplog):
    runs = tmp_path / sweep_files.NOISE_SCALE_RUNS
    runs.mkdir()
    with open(os.path.join(COMMITTED, "noise_scale", "bs0064.json")) as f:
        good = json.load(f)
    (runs / "good.json").write_text(json.dumps(good))
    (runs / "bad.json").write_text(json.dumps({**good, "steps": "many"}))
    (tmp_path / "sweep.x.json").write_text("[1, 2]")
    with caplog.at_level(logging.WARNING):
        found = sweep_files.read_noise_scale_runs(str(tmp_path))
        specs = sweep_files.read_sweep_files(str(tmp_path))
    assert [n for n, _ in found] == ["good.json"]
    assert specs == {}
    assert str(runs / "bad.json") in caplog.text and "steps" in caplog.text
    assert str(tmp_path / "sweep.x.json") in caplog.text
