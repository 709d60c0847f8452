"""The dry run's estimate: priced from calibrated step and evaluation times, finished points
left out, nothing written. Real (tiny) calibration through the command line in the slow test."""
import os
import subprocess
import sys

import pytest

from experiments.config import SweepAxes
from experiments.configs import preset
from experiments.running import calibration
from experiments.running.cost_model import PointCost
from experiments.running.sweep import SweepSpec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TINY = ["--protocol", "tiny", "--steps", "4", "--set", "model.g_ch=8", "--set", "model.d_ch=8",
        "--set", "eval.every=2", "--set", "train.checkpoint_every=2"]


def test_estimate_prices_every_point_from_the_calibration(monkeypatch, tmp_path):
    spec = SweepSpec(preset("fashion_mnist", {"train.steps": 100, "eval.every": 25}),
                     SweepAxes(batch_sizes=(8, 64, 512), seeds=(0, 1)))
    by_batch = {8: (0.05, 2.0), 512: (1.9, 3.0)}  # seconds per step, set-up seconds

    def fake_training(cfg, replicator, steps):
        b = cfg.train.global_batch_size
        return calibration.StepTiming(b, by_batch[b][1], by_batch[b][0],
                                      PointCost.for_point(cfg).step_flops)

    monkeypatch.setattr(calibration, "time_training", fake_training)
    monkeypatch.setattr(calibration, "time_evaluation", lambda cfg, rep, factory: (12.0, 4.0))
    est = calibration.estimate_sweep(spec, str(tmp_path), replicator=None,
                                     evaluator_factory=None)

    f8, f512 = (PointCost.for_point(spec.point_config(b, 0)).step_flops for b in (8, 512))
    b = (1.9 - 0.05) / (f512 - f8)  # seconds per FLOP: the line through the two timings
    a = 0.05 - b * f8
    assert est.model.per_work == pytest.approx(b)
    assert est.model.per_step == pytest.approx(a)
    want = 12.0  # once per sweep
    for _, cfg in spec.points():
        cost = PointCost.for_point(cfg)
        assert cost.evaluations == 4 + cfg.eval.replicates - 1
        want += 2.5 + 100 * (a + b * cost.step_flops) + 4.0 * cost.evaluations
    assert [name for name, _ in est.points] == [name for name, _ in spec.points()]
    assert est.total_s == pytest.approx(want)


def test_calibration_needs_no_timing_of_finished_points(monkeypatch, tmp_path):
    spec = SweepSpec(preset("fashion_mnist", {"train.steps": 10}), SweepAxes(batch_sizes=(8,)))
    monkeypatch.setattr(calibration.run_dir, "finished_record",
                        lambda cfg, directory: object())  # every point finished
    monkeypatch.setattr(calibration, "time_training", lambda cfg, rep, steps: (
        calibration.StepTiming(8, 1.0, 0.1, PointCost.for_point(cfg).step_flops)))
    monkeypatch.setattr(calibration, "time_evaluation", lambda cfg, rep, factory: (5.0, 1.0))
    est = calibration.estimate_sweep(spec, str(tmp_path), None, None)
    assert est.points == (("bs0008_seed0", None),) and est.total_s == 0.0


def test_the_sweep_calibrates_only_when_two_batch_sizes_are_left_and_survives_a_failure(
        monkeypatch, tmp_path, caplog):
    from experiments.running import sweep
    model = object()
    calls = []

    def fake_estimate(spec, out_dir, replicator, evaluator_factory):
        calls.append(evaluator_factory(spec.base))  # the sweep's own evaluator, reused
        return calibration.SweepEstimate(model, (), 0.0, 1.0, (("p", 5.0),))

    monkeypatch.setattr(calibration, "estimate_sweep", fake_estimate)
    base = preset("fashion_mnist", {"train.steps": 10})
    two = SweepSpec(base, SweepAxes(batch_sizes=(8, 64)))
    assert sweep.calibrated_prior(two, str(tmp_path), None, "evaluator") is model
    assert calls == ["evaluator"]
    one = SweepSpec(base, SweepAxes(batch_sizes=(8,), seeds=(0, 1)))  # nothing to separate
    assert sweep.calibrated_prior(one, str(tmp_path), None, "evaluator") is None
    assert len(calls) == 1

    def broken(*args):
        raise MemoryError("batch 512 does not fit")

    monkeypatch.setattr(calibration, "estimate_sweep", broken)
    assert sweep.calibrated_prior(two, str(tmp_path), None, "evaluator") is None
    assert "calibration failed (MemoryError: batch 512 does not fit)" in caplog.text


def _tree(path):
    return sorted((os.path.relpath(os.path.join(d, f), path), os.path.getsize(os.path.join(d, f)))
                  for d, _, files in os.walk(path) for f in files)


@pytest.mark.long
def test_dry_run_calibrates_on_this_machine_and_writes_nothing(tmp_path):
    out = tmp_path / "sweep"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "experiments", "sweep", *TINY, *args,
                               "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                              timeout=600, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    text = cli("--batch-sizes", "8,16", "--dry-run")
    assert not out.exists()
    lines = text.splitlines()
    for batch in (8, 16):
        step_line = next(l for l in lines if l.startswith(f"calibration: batch {batch}:"))
        assert float(step_line.split()[3]) > 0  # seconds per step
    assert any(l.startswith("calibration: one evaluation") for l in lines)
    assert [l.split()[1] for l in lines if l.startswith("estimate: ")] == [
        "bs0008_seed0", "bs0016_seed0"]
    assert "(0 of 2 points finished)" in text

    cli("--batch-sizes", "8")  # the batch-8 point, for real
    before = _tree(out)
    text = cli("--batch-sizes", "8,16", "--dry-run")
    assert "estimate: bs0008_seed0 finished earlier" in text
    assert "(1 of 2 points finished)" in text
    assert _tree(out) == before

