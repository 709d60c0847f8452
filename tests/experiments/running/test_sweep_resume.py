"""A sweep killed with SIGKILL and re-run loses nothing and gives the same table; a corrupt
metrics.json is detected and its point recomputed. Real (tiny) training in subprocesses."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ARGS = ["--batch-sizes", "8,16", "--steps", "4", "--protocol", "tiny",
        "--set", "train.checkpoint_every=2", "--set", "train.log_every=1",
        "--set", "model.g_ch=8", "--set", "model.d_ch=8", "--set", "eval.every=2"]
LIMIT_S = 300


def sweep_cmd(out):
    return [sys.executable, "-m", "experiments", "sweep", *ARGS, "--out", str(out)]


def run_sweep(out):
    proc = subprocess.run(sweep_cmd(out), cwd=ROOT, capture_output=True, text=True,
                          timeout=LIMIT_S, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def run_and_kill(out, marker: str):
    """Start a sweep and SIGKILL it as soon as `marker` appears in its output."""
    proc = subprocess.Popen(sweep_cmd(out), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                os.killpg(proc.pid, signal.SIGKILL)
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert any(marker in line for line in seen), "".join(seen[-30:])


def summary(out):
    with open(os.path.join(out, "report", "summary.json")) as f:
        return json.load(f)


def assert_same_table(a, b):
    assert [r["batch"] for r in a] == [r["batch"] for r in b]
    for ra, rb in zip(a, b):
        for key in ("is_mean", "fid", "kid", "steps", "images_seen", "done"):
            np.testing.assert_allclose(ra[key], rb[key], rtol=2e-3, err_msg=key)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "full"
    run_sweep(out)
    return out


def test_killed_sweep_resumes_to_the_same_table(uninterrupted, tmp_path):
    out = tmp_path / "killed"
    run_and_kill(out, "eval step 2")      # mid-point: after the step-2 checkpoint
    run_and_kill(out, "point 2/2")        # resumed point 1 finished; killed before point 2
    log = run_sweep(out)
    assert "bs0008_seed0: finished earlier" in log
    points = sorted(os.listdir(out / "points"))
    assert points == ["bs0008_seed0", "bs0016_seed0"]
    assert_same_table(summary(uninterrupted), summary(out))
    # Re-running a finished sweep recomputes nothing.
    log = run_sweep(out)
    assert log.count("finished earlier") == 2 and "step 1/4" not in log


def test_corrupt_metrics_are_recomputed(uninterrupted):
    before = summary(uninterrupted)
    path = uninterrupted / "points" / "bs0008_seed0" / "metrics.json"
    path.write_text(path.read_text()[:100])  # torn file
    log = run_sweep(uninterrupted)
    assert "corrupt" in log and "recomputed" in log
    assert log.count("finished earlier") == 1
    record = json.loads(path.read_text())
    assert record["status"] == "done" and "config" not in record and "history" not in record
    # the final checkpoint scored again with two more evaluation seeds (eval.replicates=3)
    seed = record["final"]["protocol"]["seed"]
    assert [r["protocol"]["seed"] for r in record["replicates"]] == [seed + 1, seed + 2]
    assert len({record["final"]["fid"]} | {r["fid"] for r in record["replicates"]}) == 3
    assert_same_table(before, summary(uninterrupted))
