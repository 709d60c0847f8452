"""A sweep on two SLURM tasks (a loopback stand-in for srun), one task SIGTERMed mid-point:
both checkpoint the same step and exit with PREEMPTED_EXIT_CODE; the same command then resumes
to the same table, evaluation histories and generator weights as an uninterrupted sweep, and
the point's record says it was preempted and resumed. Real (tiny) training in subprocesses."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pytest
from json_compare import assert_close

from replication import PREEMPTED_EXIT_CODE
from replication.launch import cluster_envs, kill_group, launch_workers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
POINT = "bs0008_seed0"
STEPS = 4
# the only checkpoint before the last step is the one preemption writes; one evaluation mid-way
ARGS = ["--batch-sizes", "8", "--steps", str(STEPS), "--protocol", "tiny", "--no-calibration",
        "--replicator", "slurm", "--set", f"train.checkpoint_every={STEPS}",
        "--set", "train.log_every=1", "--set", "model.g_ch=8", "--set", "model.d_ch=8",
        "--set", "eval.every=2"]
LIMIT_S = 900  # two TensorFlow workers on a shared CPU; a lone worker would wait forever
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "-1"}


def sweep_cmd(out):
    return [sys.executable, "-m", "experiments", "sweep", *ARGS, "--out", str(out)]


def run_sweep(out):
    launch_workers(sweep_cmd(out), num_workers=2, timeout_s=LIMIT_S, cwd=ROOT, env=ENV,
                   cluster="slurm")


def run_and_sigterm_one_task(out, marker="step 1/4"):
    """Both tasks, SIGTERM to task 1 when it prints `marker`; (exit codes, task 1's output)."""
    base = {k: v for k, v in os.environ.items() if k != "TF_CONFIG" and not k.startswith("SLURM")}
    procs, seen = [], []
    log0 = tempfile.TemporaryFile("w+")
    try:
        for i, extra in enumerate(cluster_envs(2, "slurm")):
            procs.append(subprocess.Popen(
                sweep_cmd(out), cwd=ROOT, env=dict(base, **ENV, **extra), text=True,
                stdout=subprocess.PIPE if i else log0, stderr=subprocess.STDOUT,
                start_new_session=True))
        watchdog = threading.Timer(LIMIT_S, lambda: [kill_group(p) for p in procs])
        watchdog.start()
        sent = False
        for line in procs[1].stdout:
            seen.append(line)
            if marker in line and not sent:
                os.kill(procs[1].pid, signal.SIGTERM)
                sent = True
        codes = [p.wait() for p in procs]
        watchdog.cancel()
    finally:
        for p in procs:
            if p.poll() is None:
                kill_group(p)
        log0.seek(0)
        output0 = log0.read()
        log0.close()
    assert sent, "".join(seen[-30:])
    return codes, "".join(seen), output0


def load(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


@pytest.mark.long
@pytest.mark.multiworker
def test_sigterm_to_one_slurm_task_resumes_to_the_same_sweep(tmp_path):
    full, out = tmp_path / "full", tmp_path / "preempted"
    run_sweep(full)
    codes, task1, task0 = run_and_sigterm_one_task(out)
    assert codes == [PREEMPTED_EXIT_CODE] * 2, task0[-3000:] + task1[-3000:]
    saved = [load(out, *where, "points", POINT, "interruptions.json")["preempted_at"]
             for where in ([], [".worker1"])]
    assert saved[0] == saved[1] and len(saved[0]) == 1, saved  # one step, on both tasks
    step = saved[0][0]
    assert 1 < step < STEPS, step  # mid-point, after the SIGTERM
    assert f"checkpoint saved at step {step}" in task1 and f"at step {step}" in task0
    assert os.path.exists(out / "points" / POINT / "checkpoints" / f"ckpt-{step}.index")
    assert not os.path.exists(out / "points" / POINT / "metrics.json")

    run_sweep(out)  # the same command again
    assert_close(load(full, "report", "summary.json"), load(out, "report", "summary.json"))
    for where in ([], [".worker1"]):
        history = load(out, *where, "points", POINT, "eval_history.json")
        assert [h["step"] for h in history] == [2, STEPS]  # no evaluation lost
        assert_close(load(full, *where, "points", POINT, "eval_history.json"), history)
        record = load(out, *where, "points", POINT, "metrics.json")
        reference = load(full, *where, "points", POINT, "metrics.json")
        assert (record["preempted_at"], record["resumed_from"]) == ([step], [step])
        assert (reference["preempted_at"], reference["resumed_from"]) == ([], [])
        assert_close(reference["final"], record["final"])
        resumed = np.load(os.path.join(out, *where, "points", POINT, "samples", "generator.npz"))
        uninterrupted = np.load(os.path.join(full, *where, "points", POINT, "samples",
                                             "generator.npz"))
        assert resumed.files == uninterrupted.files
        for name in resumed.files:
            np.testing.assert_array_equal(resumed[name], uninterrupted[name], err_msg=name)
