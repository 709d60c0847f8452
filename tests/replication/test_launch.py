"""The local multi-worker launcher: TF_CONFIG wiring, hard deadline, no stragglers left."""
import json
import sys
import time

import pytest

from replication.launch import PREEMPTED_EXIT_CODE, LaunchError, launch_workers, main

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


def test_slurm_stand_in_sets_what_srun_sets_for_one_node():
    script = ("import json, os; print(json.dumps({k: v for k, v in os.environ.items() "
              "if k.startswith('SLURM') or k == 'TF_CONFIG'}))")
    results = launch_workers([PY, "-c", script], 2, timeout_s=60, cluster="slurm",
                             env={"TF_CONFIG": "{}", "SLURM_JOB_ID": "1"})  # the parent's: dropped
    envs = [json.loads(r.stdout) for r in results]
    assert [(e["SLURM_PROCID"], e["SLURM_LOCALID"]) for e in envs] == [("0", "0"), ("1", "1")]
    assert all("TF_CONFIG" not in e for e in envs)
    first, last = map(int, envs[0]["SLURM_STEP_RESV_PORTS"].split("-"))
    assert last == first + 1
    for e in envs:
        assert (e["SLURM_STEP_NODELIST"], e["SLURM_STEP_TASKS_PER_NODE"],
                e["SLURM_STEP_NUM_TASKS"], e["SLURM_NTASKS"], e["SLURM_JOB_ID"]) == \
            ("localhost", "2", "2", "2", "4242")


def test_a_preempted_worker_does_not_stop_its_peers(tmp_path):
    """Its peers are saving the same step: they must be let finish, not killed."""
    script = ("import json, os, sys, time\n"
              "i = json.loads(os.environ['TF_CONFIG'])['task']['index']\n"
              f"done = os.path.join({str(tmp_path)!r}, 'worker0_exited')\n"
              f"if i == 0: open(done, 'w').close(); sys.exit({PREEMPTED_EXIT_CODE})\n"
              "while not os.path.exists(done): time.sleep(0.01)\n"
              "time.sleep(0.5)  # still saving after worker 0 exited\n"
              f"sys.exit({PREEMPTED_EXIT_CODE})")
    results = launch_workers([PY, "-c", script], 2, timeout_s=120)  # check=True: no raise
    assert all(r.preempted and not r.killed for r in results)
    assert main(["-n", "2", "--timeout", "60", "--", PY, "-c",
                 f"import sys; sys.exit({PREEMPTED_EXIT_CODE})"]) == PREEMPTED_EXIT_CODE


def test_the_launcher_knows_the_preempted_status_without_tensorflow():
    from replication import preemption
    assert PREEMPTED_EXIT_CODE == preemption.PREEMPTED_EXIT_CODE == 199
