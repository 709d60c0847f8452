"""python -m experiments selfcheck: it passes on `cpu:2` and on loopback workers, and each
check fails when its fault is injected (`--inject-fault`, the documented hook)."""
import os
import subprocess
import sys

import pytest

from experiments import selfcheck
from experiments.cli import build_parser
from experiments.selfcheck import Plan, Verdict
from replication import launch_workers, make_replicator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {"PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "-1"}
FLOAT32 = ("float32 batch-norm statistics", "float32 losses", "float32 gradients",
           "float32 updated weights")
TRAINER = ("GAN step losses", "XLA as the run sets it", "checkpoint restores what it wrote")


def statuses(verdicts) -> dict[str, str]:
    return {v.check: v.status for v in verdicts}


@pytest.fixture(scope="module")
def cpu2():
    return make_replicator("cpu:2")  # the test session has 4 logical CPUs (tests/conftest.py)


# -- the plan and its words, without TensorFlow work ----------------------------------------
def test_the_run_precision_follows_the_device_and_a_refused_one_says_why():
    assert selfcheck.run_precision("TPU", None) == ("bfloat16", None)
    assert selfcheck.run_precision("CPU", None) == ("bfloat16", None)
    assert selfcheck.run_precision("GPU", "bfloat16") == ("bfloat16", None)
    precision, why = selfcheck.run_precision("GPU", None)  # mixed float16: refused today
    assert precision == "float32" and "mixed_float16 is not offered" in why
    assert "loss scaling" in why


def test_bad_plans_and_verdicts_are_refused_in_one_line():
    with pytest.raises(ValueError, match="fault 'nan'"):
        Plan(fault="nan")
    with pytest.raises(ValueError, match="precision 'float16'"):
        Plan(precision="float16")
    with pytest.raises(ValueError, match="PASS, FAIL or SKIP"):
        Verdict("OK", "x", "y")
    assert Verdict("FAIL", "losses", "max |diff| 2").line().startswith("FAIL  losses ")


def test_global_batch_is_the_tests_batch_and_splits_evenly():
    assert [selfcheck.global_batch(r) for r in (1, 2, 4, 8, 3)] == [8, 8, 8, 16, 6]


def test_the_command_line_names_every_option(capsys):
    args = build_parser().parse_args(["selfcheck", "--replicator", "gpu:8", "--precision",
                                      "mixed_float16", "--jit-compile", "off",
                                      "--inject-fault", "checkpoint"])
    assert (args.replicator, args.precision, args.jit_compile, args.inject_fault) == (
        "gpu:8", "mixed_float16", "off", "checkpoint")
    assert build_parser().parse_args(["selfcheck"]).replicator == "auto"


# -- the float32 equivalence on cpu:2, and its two faults -----------------------------------
def test_float32_equivalence_passes_on_cpu2_with_margin(cpu2):
    verdicts = selfcheck.float32_equivalence(cpu2, Plan())
    assert statuses(verdicts) == dict.fromkeys(FLOAT32, "PASS")
    assert all("2x4 vs cpu:1 1x8" in v.detail for v in verdicts)


def test_per_replica_batch_norm_fails_the_statistics_and_the_weights(cpu2):
    got = statuses(selfcheck.float32_equivalence(cpu2, Plan(fault="per_replica_bn")))
    assert got["float32 batch-norm statistics"] == got["float32 updated weights"] == "FAIL"


def test_a_loss_over_the_per_replica_batch_fails_losses_gradients_and_weights(cpu2):
    got = statuses(selfcheck.float32_equivalence(cpu2, Plan(fault="per_replica_loss")))
    assert got["float32 losses"] == got["float32 gradients"] == "FAIL"
    assert got["float32 updated weights"] == "FAIL"


def test_one_replica_has_nothing_to_compare_and_says_so():
    lines = []
    verdicts = selfcheck.run(make_replicator("cpu:1"), Plan(precision="float32"), lines.append)
    assert verdicts[0].status == "SKIP" and "one replica" in verdicts[0].detail
    assert {v.status for v in verdicts[1:]} == {"PASS"}


# -- the trainer checks (a GAN step each; long: bfloat16 is emulated on most CPUs) ----------
@pytest.mark.long
def test_the_trainer_checks_pass_in_float32_and_the_checkpoint_fault_fails_only_its_check(
        cpu2, tmp_path):
    good = selfcheck.trainer_checks(cpu2, Plan(), "float32", str(tmp_path / "good"))
    assert [v.status for v in good] == ["PASS"] * 3, [v.line() for v in good]
    assert "auto: off on CPU" in good[1].detail and "step 2 of 2 restored" in good[2].detail
    bad = selfcheck.trainer_checks(cpu2, Plan(fault="checkpoint"), "float32",
                                   str(tmp_path / "bad"))
    assert [v.status for v in bad] == ["PASS", "PASS", "FAIL"], [v.line() for v in bad]
    assert "step 1 of 2 restored" in bad[2].detail


@pytest.mark.long
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_per_replica_batch_norm_fails_the_gan_step_in_either_precision(cpu2, tmp_path,
                                                                       precision):
    got = selfcheck.trainer_checks(cpu2, Plan(fault="per_replica_bn"), precision,
                                   str(tmp_path))
    assert [v.status for v in got] == ["FAIL", "PASS", "PASS"], [v.line() for v in got]


def _command(*args):
    return [sys.executable, "-m", "experiments", "selfcheck", *args]


@pytest.mark.long  # the whole self-check in a fresh process: about a minute here
def test_the_command_passes_on_cpu2_and_prints_a_summary():
    proc = subprocess.run(_command("--replicator", "cpu:2"), capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **ENV}, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    verdicts = [l for l in lines if l[:4] in ("PASS", "FAIL", "SKIP")]
    assert len(verdicts) == 7 and all(l.startswith("PASS") for l in verdicts), verdicts
    assert "bfloat16 GAN step losses" in proc.stdout
    assert "python -m experiments selfcheck: passed (7 pass, 0 fail, 0 skip" in proc.stdout
    for fact in ("suite commit:", "tensorflow 2.", "replicator: cpu:2, 2 replica(s)",
                 "device:CPU:1", "precision: float32 and bfloat16"):
        assert fact in proc.stdout, fact


@pytest.mark.slow
def test_an_injected_fault_makes_the_command_exit_1_naming_the_check():
    proc = subprocess.run(_command("--replicator", "cpu:2", "--precision", "float32",
                                   "--inject-fault", "per_replica_loss"),
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, **ENV},
                          timeout=900)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAIL  float32 losses" in proc.stdout and "injected fault: per_replica_loss" in \
        proc.stdout


@pytest.mark.long
@pytest.mark.multiworker
def test_the_command_passes_in_each_of_two_loopback_workers():
    results = launch_workers(_command("--replicator", "multiworker", "--precision", "float32"),
                             num_workers=2, timeout_s=600, cwd=ROOT, env=ENV)
    for r in results:
        assert r.ok, r.stdout[-3000:] + r.stderr[-3000:]
        assert "2 replica(s) on 2 worker(s)" in r.stdout
        assert "python -m experiments selfcheck: passed (7 pass" in r.stdout, r.stdout[-3000:]
