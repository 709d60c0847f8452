"""Bad or partial cluster environments stop the command line at once: exit status 2 and one
line naming the variable that is missing or wrong (never a worker waiting for its peers)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from replication.launch import slurm_envs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT_S = 300  # generous: one TensorFlow import on a shared CPU


def train(tmp_path, spec: str, env: dict):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("TF_CONFIG", "TPU_NAME") and not k.startswith("SLURM")}
    command = [sys.executable, "-m", "experiments", "train", "--steps", "1", "--replicator",
               spec, "--out", str(tmp_path / "run")]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=LIMIT_S,
                          env=dict(clean, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="-1",
                                   **env))


def assert_one_line(proc, *phrases):
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["slurm", "auto"])
def test_slurm_procid_without_the_step_nodelist(tmp_path, spec):
    env = {k: v for k, v in slurm_envs(2, 20000)[0].items() if k != "SLURM_STEP_NODELIST"}
    assert_one_line(train(tmp_path, spec, env), "SLURM_PROCID=0 is set but "
                    "SLURM_STEP_NODELIST is not", "srun")


@pytest.mark.slow
def test_tf_config_task_index_out_of_range(tmp_path):
    config = {"cluster": {"worker": ["127.0.0.1:20000", "127.0.0.1:20001"]},
              "task": {"type": "worker", "index": 2}}
    assert_one_line(train(tmp_path, "multiworker", {"TF_CONFIG": json.dumps(config)}),
                    "TF_CONFIG task index 2 is out of range", "cluster.worker lists 2")


@pytest.mark.slow
def test_port_in_use(tmp_path):
    with socket.socket() as holder:  # another process's server on this task's SLURM port
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        env = slurm_envs(1, port)[0]
        assert env["SLURM_STEP_RESV_PORTS"] == f"{port}-{port}"
        assert_one_line(train(tmp_path, "slurm", env), f"port {port} of this task",
                        f"SLURM_STEP_RESV_PORTS={port}-{port}", "already in use")
