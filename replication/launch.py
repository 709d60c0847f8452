"""Start W TensorFlow worker processes on this machine, wired together on loopback ports.

For trying multi-host code (specs "multiworker", "slurm") on one machine, and for our tests:

    python -m replication.launch --workers 2 --timeout 600 -- \
        python train.py --replicator multiworker
    python -m replication.launch --cluster slurm --workers 2 --timeout 600 -- \
        python train.py --replicator slurm

    from replication import launch_workers
    results = launch_workers([sys.executable, "worker.py"], num_workers=2, timeout_s=120)

Each worker gets TF_CONFIG = {"cluster": {"worker": ["127.0.0.1:P0", ...]},
"task": {"type": "worker", "index": i}} on free ports, or with cluster="slurm" the variables
srun sets for `srun --nodes 1 --ntasks W --resv-ports W` on a host called localhost (a stand-in
for SLURM, which this machine does not have). Why the hard timeout and SIGKILL: a
worker whose peer died (or never started) blocks forever in the collective handshake and
ignores SIGTERM. So every worker runs in its own process group, the whole group is SIGKILLed
at the deadline, and when one worker fails the others are killed at once instead of waiting.
A worker that exits preempted (replication.preemption) has not failed: its peers are saving
the same step and exit after it.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from replication.preemption import PREEMPTED_EXIT_CODE

TIMEOUT_EXIT_CODE = 124  # what `timeout(1)` returns; used by the CLI
CLUSTERS = ("tf_config", "slurm")


@dataclass(frozen=True)
class WorkerResult:
    index: int
    returncode: int  # negative: killed by that signal (-9 after a timeout or a peer's failure)
    stdout: str  # empty when output was not captured
    stderr: str
    killed: bool  # SIGKILLed by the launcher (deadline passed, or a peer failed)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.killed

    @property
    def preempted(self) -> bool:
        return self.returncode == PREEMPTED_EXIT_CODE and not self.killed


class LaunchError(RuntimeError):
    """A worker failed or the deadline passed; the message holds every worker's stderr tail."""

    def __init__(self, message: str, results: list[WorkerResult]):
        super().__init__(message)
        self.results = results


def free_loopback_ports(n: int) -> list[int]:
    """`n` distinct ports free on 127.0.0.1 right now (held together, then released)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port_range(n: int, attempts: int = 200) -> int:
    """A port P with P..P+n-1 all free on 127.0.0.1 right now (SLURM's resolver gives the
    tasks of a node consecutive ports)."""
    for _ in range(attempts):
        base = free_loopback_ports(1)[0]
        if base + n - 1 <= 65535 and all(_free(base + k) for k in range(n)):
            return base
    raise RuntimeError(f"no {n} consecutive free loopback ports found in {attempts} tries")


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def slurm_envs(num_workers: int, port_base: int | None = None) -> list[dict]:
    """The SLURM variables of each task of `srun --nodes 1 --ntasks W --resv-ports W` on a
    host called localhost, as srun sets them (without any SLURM)."""
    base = port_base or free_port_range(num_workers)
    n = str(num_workers)
    step = {"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_NTASKS": n,
            "SLURM_NPROCS": n, "SLURM_STEP_NUM_TASKS": n, "SLURM_JOB_NUM_NODES": "1",
            "SLURM_NNODES": "1", "SLURM_STEP_NUM_NODES": "1", "SLURM_NODELIST": "localhost",
            "SLURM_JOB_NODELIST": "localhost", "SLURM_STEP_NODELIST": "localhost",
            "SLURM_TASKS_PER_NODE": n, "SLURM_STEP_TASKS_PER_NODE": n,
            "SLURMD_NODENAME": "localhost", "SLURM_NODEID": "0",
            "SLURM_STEP_RESV_PORTS": f"{base}-{base + num_workers - 1}"}
    return [dict(step, SLURM_PROCID=str(i), SLURM_LOCALID=str(i)) for i in range(num_workers)]


def cluster_envs(num_workers: int, cluster: str = "tf_config") -> list[dict]:
    """Each worker's additions to the environment for `cluster` ('tf_config' or 'slurm')."""
    if cluster == "tf_config":
        return [{"TF_CONFIG": c} for c in tf_configs(num_workers)]
    if cluster == "slurm":
        return slurm_envs(num_workers)
    raise ValueError(f"cluster must be one of {CLUSTERS}, got {cluster!r}")


def tf_configs(num_workers: int, ports: list[int] | None = None) -> list[str]:
    """The TF_CONFIG JSON string of each of `num_workers` loopback workers."""
    ports = ports or free_loopback_ports(num_workers)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    return [json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
            for i in range(num_workers)]


def kill_group(proc: subprocess.Popen, settle_s: float = 5.0) -> None:
    """SIGKILL the worker's process group (it leads its own session) and wait for it to die.

    The worker's children die with it but are reaped by init, not by us; waiting (bounded)
    until none of the group is still running keeps "nothing left running on return" true.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    deadline = time.monotonic() + settle_s
    while _group_running(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _group_running(pgid: int) -> bool:
    """Whether a process of group `pgid` is alive (zombies awaiting reaping do not count)."""
    if not os.path.isdir("/proc"):  # not Linux: fall back to "any member, zombies included"
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, _, group = f.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):
            continue  # exited while we looked
        if int(group) == pgid and state != "Z":
            return True
    return False


def launch_workers(command: list[str], num_workers: int, timeout_s: float, *,
                   env: dict | None = None, cwd: str | None = None, capture: bool = True,
                   check: bool = True, poll_s: float = 0.05,
                   cluster: str = "tf_config") -> list[WorkerResult]:
    """Run `command` as `num_workers` loopback workers; return when all end or are killed.

    `cluster` says how the workers learn of each other: TF_CONFIG, or SLURM's variables
    (`cluster_envs`). `env` adds to (and overrides) this process's environment, whose own
    TF_CONFIG and SLURM_* variables are left out. With `capture` the workers'
    stdout/stderr are returned (buffered in temporary files, so a chatty worker cannot block
    on a full pipe); without it they go to this process's terminal. With `check` a failed or
    timed-out launch raises LaunchError. Every worker still alive at the deadline, or after
    a peer failed, is SIGKILLed with its process group; nothing is left running on return.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    base_env = {k: v for k, v in dict(os.environ, **(env or {})).items()
                if k != "TF_CONFIG" and not k.startswith("SLURM")}
    procs, logs, killed = [], [], set()
    deadline = time.monotonic() + timeout_s
    timed_out = False
    try:
        for worker_env in cluster_envs(num_workers, cluster):
            out, err = ((tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+"))
                        if capture else (None, None))
            logs.append((out, err))
            procs.append(subprocess.Popen(command, env=dict(base_env, **worker_env),
                                          cwd=cwd, stdout=out, stderr=err,
                                          start_new_session=True))
        while any(p.poll() is None for p in procs):
            failed = any(p.returncode not in (None, 0, PREEMPTED_EXIT_CODE) for p in procs)
            timed_out = time.monotonic() > deadline
            if failed or timed_out:
                break
            time.sleep(poll_s)
    finally:  # also on KeyboardInterrupt: never leave a worker blocked on its peers
        for i, p in enumerate(procs):
            if p.poll() is None:
                kill_group(p)
                killed.add(i)
    results = [WorkerResult(i, p.returncode, *_read(logs[i]), killed=i in killed)
               for i, p in enumerate(procs)]
    if check and not all(r.ok or r.preempted for r in results):
        reason = f"deadline of {timeout_s:g} s passed" if timed_out else "a worker failed"
        raise LaunchError(f"local multi-worker launch of {command}: {reason}\n"
                          + "\n".join(_describe(r) for r in results), results)
    return results


def _read(files) -> tuple[str, str]:
    texts = []
    for f in files:
        if f is None:
            texts.append("")
        else:
            f.seek(0)
            texts.append(f.read())
            f.close()
    return texts[0], texts[1]


def _describe(r: WorkerResult, tail_chars: int = 3000) -> str:
    state = "killed" if r.killed else f"exit {r.returncode}"
    return f"--- worker {r.index} ({state}) stderr tail:\n{r.stderr[-tail_chars:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m replication.launch",
        description="Run a command as W TensorFlow workers on loopback (TF_CONFIG or SLURM "
                    "variables set for each).")
    parser.add_argument("--workers", "-n", type=int, default=2, help="number of workers")
    parser.add_argument("--cluster", choices=CLUSTERS, default="tf_config",
                        help="how the workers find each other: TF_CONFIG (default) or SLURM's "
                             "variables as srun sets them")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds before every worker is SIGKILLed (default 600)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the worker command, after `--`")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the worker command after `--`")
    results = launch_workers(command, args.workers, args.timeout, capture=False, check=False,
                             cluster=args.cluster)
    for r in results:
        state = "killed" if r.killed else f"exit {r.returncode}"
        print(f"worker {r.index}: {state}", file=sys.stderr)
    failed = [r.returncode for r in results if not r.killed and r.returncode != 0]
    if failed:  # a worker's own failure explains the peers that were killed after it
        return failed[0] if failed[0] > 0 else 128 - failed[0]
    return TIMEOUT_EXIT_CODE if any(r.killed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
