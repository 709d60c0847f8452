"""The local multi-worker launcher: TF_CONFIG wiring, hard deadline, no stragglers left."""
import json
import sys
import time

import pytest

from replication.launch import LaunchError, launch_workers, main

PY = sys.executable
# A worker that ignores SIGTERM and parks a grandchild, like a TF worker waiting for its peer.
STUBBORN = """
import json, os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
with open(os.path.join(sys.argv[1], f"grandchild{index}.pid"), "w") as f:
    f.write(str(child.pid))
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie is dead, awaiting reaping
    except FileNotFoundError:
        return False


def test_each_worker_gets_its_own_loopback_tf_config():
    results = launch_workers([PY, "-c", "import os; print(os.environ['TF_CONFIG'])"], 3,
                             timeout_s=60)
    configs = [json.loads(r.stdout) for r in results]
    workers = configs[0]["cluster"]["worker"]
    assert len(set(workers)) == 3 and all(w.startswith("127.0.0.1:") for w in workers)
    assert [c["task"] for c in configs] == [{"type": "worker", "index": i} for i in range(3)]
    assert all(c["cluster"] == configs[0]["cluster"] for c in configs)


def test_deadline_kills_workers_and_their_children(tmp_path):
    start = time.monotonic()
    with pytest.raises(LaunchError, match="deadline of 3 s passed") as err:
        launch_workers([PY, "-c", STUBBORN, str(tmp_path)], 2, timeout_s=3)
    assert time.monotonic() - start < 30
    assert all(r.killed and r.returncode == -9 for r in err.value.results)
    grandchildren = [int(p.read_text()) for p in tmp_path.glob("grandchild*.pid")]
    assert len(grandchildren) == 2 and not any(alive(pid) for pid in grandchildren)


def test_a_failed_worker_stops_its_waiting_peer_at_once():
    script = ("import json, os, sys, time\n"
              "i = json.loads(os.environ['TF_CONFIG'])['task']['index']\n"
              "sys.exit(3) if i == 0 else time.sleep(600)")
    start = time.monotonic()
    with pytest.raises(LaunchError, match="a worker failed") as err:
        launch_workers([PY, "-c", script], 2, timeout_s=120)
    assert time.monotonic() - start < 30  # not the 120 s deadline
    first, second = err.value.results
    assert first.returncode == 3 and not first.killed and second.killed


def test_command_line_returns_the_failing_workers_exit_code():
    ok = [PY, "-c", "print('hi')"]
    assert main(["-n", "2", "--timeout", "60", "--", *ok]) == 0
    assert main(["-n", "2", "--timeout", "60", "--", PY, "-c", "import sys; sys.exit(5)"]) == 5
