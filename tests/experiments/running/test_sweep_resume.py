"""A sweep killed with SIGKILL and re-run loses nothing and gives the same table, also when
killed at 10 seeded random moments (common/faults.py); a corrupt metrics.json is detected and
its point recomputed. Real (tiny) training in subprocesses."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from json_compare import assert_close

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ARGS = ["--batch-sizes", "8,16", "--steps", "4", "--protocol", "tiny",
        "--set", "train.checkpoint_every=2", "--set", "train.log_every=1",
        "--set", "model.g_ch=8", "--set", "model.d_ch=8", "--set", "eval.every=2"]
LIMIT_S = 300


def sweep_cmd(out, calibrate=True):
    return [sys.executable, "-m", "experiments", "sweep", *ARGS, "--out", str(out),
            *([] if calibrate else ["--no-calibration"])]


def run_sweep(out, fault=None, check=True, calibrate=True):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("SNGAN_FAULT_AT", None)
    if fault:
        env["SNGAN_FAULT_AT"] = fault
    proc = subprocess.run(sweep_cmd(out, calibrate), cwd=ROOT, capture_output=True, text=True,
                          timeout=LIMIT_S, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr if check else (proc.returncode, proc.stdout + proc.stderr)


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
    log = run_sweep(out)
    # the ETA starts from a calibration (which writes nothing into the sweep), not from "?"
    assert "calibrated in" in log and "point 1/2: bs0008_seed0" in log, log[-3000:]
    first = next(line for line in log.splitlines() if "point 1/2" in line)
    assert "ETA ?" not in first and "ETA " in first
    return out


@pytest.mark.slow  # four more sweeps in fresh processes
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


KILLS = 10
# (event, largest n): small n keep the runs short and leave work for the next kill
FAULTS = [("step", 3), ("checkpoint", 2), ("eval", 3), ("history_write", 2),
          ("record_write", 1)]


def draw_faults(seed=2019):
    rng = np.random.default_rng(seed)
    while True:
        event, most = FAULTS[rng.integers(len(FAULTS))]
        fault = f"{event}:{rng.integers(1, most + 1)}"
        if event != "step" and rng.random() < 0.5:  # kill inside the write / evaluation
            fault += f"+{rng.uniform(0.0, 0.05):.3f}"
        yield fault


def unfinished_points(out) -> int:
    done = 0
    for name in ("bs0008_seed0", "bs0016_seed0"):
        try:
            with open(os.path.join(out, "points", name, "metrics.json")) as f:
                done += json.load(f)["status"] == "done"
        except (OSError, ValueError, TypeError, KeyError):
            pass
    return 2 - done


def load(out, *parts):
    with open(os.path.join(out, *parts)) as f:
        return json.load(f)


@pytest.mark.long
def test_killed_at_random_moments_the_sweep_loses_nothing(uninterrupted, tmp_path):
    out = tmp_path / "killed"
    faults, kills, logs = draw_faults(), [], []
    for _ in range(KILLS):
        # the drawn fault, or at the latest before the sweep's last record is written, so
        # that every run is killed and the sweep finishes only in the final run below
        fault = f"{next(faults)},record_write:{unfinished_points(out)}"
        # without calibration, whose steps and evaluation would take most of the kills;
        # compared below with the calibrated uninterrupted sweep, which it must equal
        code, log = run_sweep(out, fault, check=False, calibrate=False)
        assert code == -signal.SIGKILL, f"{fault}: exit {code}\n{log[-3000:]}"
        kills.append(fault)
        logs.append(log)
    final = run_sweep(out, calibrate=False)
    assert "resumed from" in "".join(logs) + final, "no run resumed from a checkpoint"
    assert "finished earlier" in final or "resumed from" in final
    assert_close(summary(uninterrupted), summary(out))
    for point in ("bs0008_seed0", "bs0016_seed0"):
        assert_close(load(uninterrupted, "points", point, "eval_history.json"),
                     load(out, "points", point, "eval_history.json"), point)
        record = load(out, "points", point, "metrics.json")
        assert record["status"] == "done" and record["jit_compile"] is False
        reference = load(uninterrupted, "points", point, "metrics.json")
        assert_close(reference["final"], record["final"], point)
        assert_close(reference["replicates"], record["replicates"], point)
    print("faults:", kills)


@pytest.mark.slow  # the uninterrupted sweep it repairs runs in a fresh process
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
