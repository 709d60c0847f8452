"""A real one-node SLURM cluster on localhost, in a temporary directory, for the tests.

munged, slurmctld and slurmd from Debian's `slurm-wlm` and `munge`, each with its own socket,
ports, spool and PID file under the directory, so nothing of the machine's own configuration
is used and stop() ends exactly the daemons start() began (by PID). Two partitions:
`ci` (the default, PriorityTier 1, PreemptMode REQUEUE with a GraceTime) and `urgent`
(PriorityTier 2), so a job in `urgent` preempts one in `ci` as SLURM does on a real cluster
(preempt/partition_prio). Running it needs root (slurmd starts jobs as their user).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "scontrol", "scancel", "sinfo")
SBIN = ("/usr/sbin", "/usr/bin", "/sbin")
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
GRACE_S = 120  # the partition's GraceTime: a preempted job's time to save before SIGKILL
KILL_WAIT_S = 10  # SIGTERM to SIGKILL when SLURM itself ends a step
# A requeued job waits out the step credential's lifetime before it may start again (slurm.conf
# AuthInfo cred_expire, 120 s by default) and then the next pass of the main scheduling loop
# (SchedulerParameters sched_interval, 60 s by default): over two idle minutes per requeue.
CRED_EXPIRE_S = 20  # SLURM's minimum is 5; a step launches within seconds here
SCHED_INTERVAL_S = 2


class Unavailable(RuntimeError):
    """SLURM cannot run here (not installed, or not root): the reason, for a skip message."""


def _find(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    return next((p for d in SBIN if os.access(p := os.path.join(d, name), os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable_reason() -> str | None:
    missing = [n for n in DAEMONS + CLIENTS if not _find(n)]
    if missing:
        return (f"SLURM is not installed ({', '.join(missing)} not found): "
                "apt-get install slurm-wlm munge (.ci/run does)")
    if os.geteuid() != 0:
        return "a local SLURM cluster needs root (slurmd starts each job as its user)"
    return None


class LocalSlurm:
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.conf = os.path.join(self.root, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self._pid_files = [os.path.join(self.root, f"{d}.pid") for d in DAEMONS]

    def _path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def _write_conf(self) -> None:
        ctld_port, d_port = _free_port(), _free_port()
        cpus = max(2, os.cpu_count() or 2)
        lines = [
            "ClusterName=sngan-ci", "SlurmctldHost=localhost", "SlurmUser=root",
            "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={self._path('munge.socket')},cred_expire={CRED_EXPIRE_S}",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/builtin", f"SchedulerParameters=sched_interval={SCHED_INTERVAL_S}",
            "ReturnToService=2", "JobRequeue=1",
            f"KillWait={KILL_WAIT_S}", f"SlurmctldPort={ctld_port}", f"SlurmdPort={d_port}",
            f"StateSaveLocation={self._path('state')}",
            f"SlurmdSpoolDir={self._path('spool')}",
            f"SlurmctldPidFile={self._path('slurmctld.pid')}",
            f"SlurmdPidFile={self._path('slurmd.pid')}",
            f"SlurmctldLogFile={self._path('slurmctld.log')}",
            f"SlurmdLogFile={self._path('slurmd.log')}",
            "PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE",
            f"NodeName=localhost CPUs={cpus} RealMemory=1000 State=UNKNOWN",
            "PartitionName=ci Nodes=localhost Default=YES MaxTime=INFINITE State=UP "
            f"PriorityTier=1 GraceTime={GRACE_S}",
            "PartitionName=urgent Nodes=localhost MaxTime=INFINITE State=UP PriorityTier=2 "
            "PreemptMode=OFF",
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self, timeout_s: float = 60) -> LocalSlurm:
        reason = unavailable_reason()
        if reason:
            raise Unavailable(reason)
        for d in ("state", "spool"):
            os.makedirs(self._path(d), exist_ok=True)
        key = self._path("munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self._write_conf()
        subprocess.run([_find("munged"), f"--key-file={key}",
                        f"--socket={self._path('munge.socket')}",
                        f"--pid-file={self._path('munged.pid')}",
                        f"--log-file={self._path('munged.log')}",
                        f"--seed-file={self._path('munged.seed')}", "--force"], check=True)
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run([_find(daemon), "-f", self.conf], check=True, env=self.env)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = self.run("sinfo", "-h", "-p", "ci", "-o", "%T", check=False).strip()
            if state == "idle":
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"local SLURM node not idle after {timeout_s} s (sinfo: {state!r}); "
                           f"see {self.root}/*.log")

    def stop(self) -> None:
        """scancel everything, then end the daemons this instance started, by their PIDs."""
        self.run("scancel", "--full", "--signal=KILL", "--user=root", check=False)
        pids = []
        for path in reversed(self._pid_files):  # slurmd, slurmctld, then munged
            try:
                with open(path) as f:
                    pids.append(int(f.read().strip()))
            except (OSError, ValueError):
                continue
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in pids:
            _signal(pid, signal.SIGKILL)

    def run(self, tool: str, *args: str, check: bool = True) -> str:
        done = subprocess.run([_find(tool), *args], env=self.env, capture_output=True,
                              text=True, timeout=60)
        if check and done.returncode:
            raise RuntimeError(f"{tool} {' '.join(args)}: exit {done.returncode}: "
                               f"{done.stderr.strip()}")
        return done.stdout

    def submit(self, script: str | None, *args: str, sbatch_options=(), cwd: str,
               env=None) -> int:
        """sbatch SCRIPT ARGS (script None: the job is the options' --wrap) -> the job id."""
        command = [script, *args] if script else []
        done = subprocess.run([_find("sbatch"), "--parsable", *sbatch_options, *command],
                              cwd=cwd, env=dict(self.env, **(env or {})), capture_output=True,
                              text=True, timeout=60)
        if done.returncode:
            raise RuntimeError(f"sbatch failed ({done.returncode}): {done.stderr.strip()}")
        return int(done.stdout.strip().split(";")[0])

    def job(self, job_id: int) -> dict:
        """`scontrol show job` as a dict (JobState, Restarts, ExitCode, ...)."""
        text = self.run("scontrol", "-o", "show", "job", str(job_id))
        return dict(re.findall(r"(\w+)=(\S*)", text))

    def wait(self, job_id: int, timeout_s: float, states=TERMINAL) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            info = self.job(job_id)
            if info.get("JobState") in states:
                return info
            time.sleep(1)
        raise TimeoutError(f"job {job_id} not in {sorted(states)} after {timeout_s} s: "
                           f"{self.job(job_id).get('JobState')}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass
