"""Preemption that loses no step: SIGTERM makes every worker checkpoint the same step and exit
with PREEMPTED_EXIT_CODE; the same command then resumes and ends exactly where an uninterrupted
run ends, with every step's 'evaluation' (tests/replication/preemption_worker.py)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tiny_training

from replication import PREEMPTED_EXIT_CODE, launch_workers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "preemption_worker.py")
STEPS = 6
SIGTERM_AT = 2
# The handler agrees on the step after the one where the SIGTERM is noticed.
SAVED_AT = SIGTERM_AT + 1
HARD_LIMIT_S = 300  # a worker whose peer died would otherwise block forever
ENV = {"PYTHONPATH": os.pathsep.join([REPO, HERE]), "TF_CPP_MIN_LOG_LEVEL": "2",
       "CUDA_VISIBLE_DEVICES": "-1"}


def run_single(out, sigterm_at=None):
    command = [sys.executable, WORKER, "default", str(out), str(STEPS)]
    command += [str(sigterm_at)] if sigterm_at else []
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG" and not k.startswith("SLURM")}
    return subprocess.run(command, cwd=REPO, env=dict(env, **ENV), capture_output=True,
                          text=True, timeout=HARD_LIMIT_S)


def run_slurm(out, sigterm_at=None):
    command = [sys.executable, WORKER, "slurm", str(out), str(STEPS)]
    command += [str(sigterm_at)] if sigterm_at else []
    return launch_workers(command, num_workers=2, timeout_s=HARD_LIMIT_S, cwd=REPO, env=ENV,
                          cluster="slurm", check=sigterm_at is None)


def history(out, worker=0):
    with open(os.path.join(out, f"worker{worker}", "history.json")) as f:
        return json.load(f)


def checkpoint_steps(out, worker=0):
    directory = os.path.join(out, f"worker{worker}", "checkpoints")
    return sorted(int(f[len("ckpt-"):-len(".index")]) for f in os.listdir(directory)
                  if f.endswith(".index"))


def assert_same_run(resumed, full):
    for i in range(len(tiny_training.initial_weights())):
        np.testing.assert_array_equal(resumed[f"w{i}"], full[f"w{i}"])
    assert int(resumed["iterations"]) == int(full["iterations"]) == STEPS


@pytest.mark.long
def test_sigterm_to_a_single_worker_saves_then_resumes_exactly(tmp_path):
    full = run_single(tmp_path / "full")
    assert full.returncode == 0, full.stderr[-3000:]
    out = tmp_path / "preempted"
    cut = run_single(out, sigterm_at=SIGTERM_AT)
    assert cut.returncode == PREEMPTED_EXIT_CODE, cut.stderr[-3000:]
    assert f"preempted at step {SAVED_AT}" in cut.stdout
    assert checkpoint_steps(out)[-1] == SAVED_AT
    assert [h["step"] for h in history(out)] == list(range(1, SAVED_AT + 1))
    again = run_single(out)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed, reference = np.load(out / "worker0.npz"), np.load(tmp_path / "full" / "worker0.npz")
    assert int(resumed["resumed_from"]) == SAVED_AT and int(reference["resumed_from"]) == 0
    assert_same_run(resumed, reference)
    assert history(out) == history(tmp_path / "full")  # every step's evaluation, same values


@pytest.mark.long
@pytest.mark.multiworker
def test_sigterm_to_one_slurm_worker_stops_both_at_one_step_and_resumes_exactly(tmp_path,
                                                                                replicator):
    full = tmp_path / "full"
    run_slurm(full)
    workers = [np.load(full / f"worker{i}.npz") for i in range(2)]
    assert [int(w["workers"]) for w in workers] == [2, 2]
    # two SLURM tasks train like one process on the same global batch
    single = tiny_training.train_checkpointed(replicator("cpu:1"), str(tmp_path / "single"),
                                              STEPS)
    for i, ref in enumerate(single["weights"]):
        np.testing.assert_array_equal(workers[0][f"w{i}"], workers[1][f"w{i}"])
        np.testing.assert_allclose(workers[0][f"w{i}"], ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose([h["loss"] for h in history(full)],
                               [h["loss"] for h in single["history"]], rtol=2e-5)

    out = tmp_path / "preempted"
    results = run_slurm(out, sigterm_at=SIGTERM_AT)  # SIGTERM to the second task only
    for r in results:
        assert r.returncode == PREEMPTED_EXIT_CODE and not r.killed, r.stderr[-3000:]
        assert f"preempted at step {SAVED_AT}" in r.stdout
    assert [checkpoint_steps(out, i)[-1] for i in range(2)] == [SAVED_AT, SAVED_AT]
    run_slurm(out)
    for i in range(2):
        resumed = np.load(out / f"worker{i}.npz")
        assert int(resumed["resumed_from"]) == SAVED_AT
        assert_same_run(resumed, workers[i])
        assert history(out, i) == history(full, i)
