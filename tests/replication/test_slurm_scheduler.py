"""scripts/slurm_sweep.sbatch under a real SLURM (slurmctld + slurmd + munged on localhost,
tests/support/local_slurm.py): a two-task CPU job runs to its report; preempted part-way in
each way SLURM can deliver SIGTERM, it is requeued once and the requeued job resumes to the
uninterrupted run's histories and table; a task SIGKILLed mid-run (a lost node) ends the job
within the stated time, and submitting again resumes from the last checkpoint.

The three ways a SIGTERM comes: to the job steps only (`scancel --signal=TERM JOB`, as
`--signal=TERM@300` sends it before the time limit), from SLURM's own preemption (a job in a
higher-tier partition, PreemptMode=REQUEUE with a GraceTime: measured here to reach the steps
only too), and to the batch shell as well (`scancel --signal=TERM --full`). In the last, srun
turns its own SIGTERM into SIGKILL of the tasks (srun(1); slurm's src/srun/srun_job.c), so no
job script can let them save that step: the job is requeued once and resumes from the last
periodic checkpoint, to the same results.
"""
import csv
import json
import os
import re
import signal
import sys
import time

import pytest
from json_compare import assert_close
from local_slurm import KILL_WAIT_S, LocalSlurm, Unavailable, _free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "slurm_sweep.sbatch")
POINT = "bs0008_seed0"
STEPS = 12
CHECKPOINT_EVERY = 4
SWEEP_ARGS = ["--steps", str(STEPS), "--protocol", "tiny", "--no-calibration",
              "--set", f"train.checkpoint_every={CHECKPOINT_EVERY}", "--set", "train.log_every=1",
              "--set", "model.g_ch=8", "--set", "model.d_ch=8", "--set", "eval.every=4"]
RESOURCES = ["--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=1", "--gpus-per-task=0",
             "--time=30"]
TASK_WAIT_S = 20  # SNGAN_TASK_WAIT: a lost task's peer is ended this long after it
LOST_TASK_LIMIT_S = TASK_WAIT_S + KILL_WAIT_S + 60  # kill to job end, stated in docs/scale.md
JOB_LIMIT_S = 900  # one job: two TensorFlow workers on a shared 2-core machine
MARKER = re.compile(rf"step [2-5]/{STEPS} ")  # part-way through the point: preempt here
AFTER_FIRST_CHECKPOINT = re.compile(
    rf"step [{CHECKPOINT_EVERY + 1}-{CHECKPOINT_EVERY + 3}]/{STEPS} ")  # kill here

# CI runs the uninterrupted job and the commonest preemption (slow); the other ways SLURM ends a
# job are minutes each on a 2-core machine (long: scripts/test.sh --long).
pytestmark = pytest.mark.multiworker


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    try:
        slurm = LocalSlurm(str(tmp_path_factory.mktemp("slurm"))).start()
    except Unavailable as e:
        pytest.skip(str(e))
    yield slurm
    slurm.stop()


class Job:
    """One submission of the example script: its id, output file and sweep directory."""

    def __init__(self, cluster, out, log_dir):
        self.cluster, self.out, self.log_dir = cluster, str(out), str(log_dir)
        os.makedirs(self.log_dir, exist_ok=True)
        self.port = _free_port()
        self.id = None

    def submit(self, extra_options=()):
        env = dict(SNGAN_PRESET="fashion_mnist", SNGAN_BATCH_SIZES="8", SNGAN_SEEDS="0",
                   SNGAN_OUT=self.out, SNGAN_PYTHON=sys.executable,
                   SNGAN_TASK_WAIT=str(TASK_WAIT_S), TF_CPP_MIN_LOG_LEVEL="2",
                   PYTHONHASHSEED="0")
        self.id = self.cluster.submit(
            SCRIPT, *SWEEP_ARGS, "--replicator", f"slurm:port={self.port}",
            sbatch_options=[*RESOURCES, f"--output={self.log_dir}/job-%j.out",
                            *extra_options], cwd=ROOT, env=env)
        return self

    @property
    def log(self) -> str:
        try:
            with open(os.path.join(self.log_dir, f"job-{self.id}.out")) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait_for(self, pattern, timeout_s=JOB_LIMIT_S):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if pattern.search(self.log):
                return
            if self.cluster.job(self.id).get("JobState") in ("COMPLETED", "FAILED"):
                break
            time.sleep(0.2)
        raise AssertionError(f"no {pattern.pattern!r} in job {self.id}'s output:\n"
                             f"{self.log[-4000:]}")

    def finish(self, timeout_s=2 * JOB_LIMIT_S) -> dict:
        info = self.cluster.wait(self.id, timeout_s)
        return info


def load(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


def table(out):
    with open(os.path.join(out, "report", "table.csv")) as f:
        rows = list(csv.DictReader(f))
    return [{k: v for k, v in row.items() if "time" not in k} for row in rows]


def assert_same_results(reference, out):
    """The histories (both workers), final scores and table of an uninterrupted run."""
    for where in ([], [".worker1"]):
        assert_close(load(reference, *where, "points", POINT, "eval_history.json"),
                     load(out, *where, "points", POINT, "eval_history.json"))
        assert_close(load(reference, *where, "points", POINT, "metrics.json")["final"],
                     load(out, *where, "points", POINT, "metrics.json")["final"])
    assert table(reference) == table(out)


@pytest.fixture(scope="module")
def reference(cluster, tmp_path_factory):
    """The uninterrupted two-task job: it completes, and only the chief writes a report."""
    base = tmp_path_factory.mktemp("reference")
    job = Job(cluster, base / "out", base / "logs").submit()
    info = job.finish()
    assert (info["JobState"], info["ExitCode"], info["Restarts"]) == \
        ("COMPLETED", "0:0", "0"), job.log[-4000:]
    out = job.out
    assert os.path.exists(os.path.join(out, "report", "table.csv"))
    assert not os.path.exists(os.path.join(out, ".worker1", "report")), "a worker wrote a report"
    assert not os.path.exists(os.path.join(out, ".worker1", "points", POINT, "samples",
                                           "class_grid.png"))
    for where in ([], [".worker1"]):  # what a worker needs to resume and to skip a done point
        assert load(out, *where, "points", POINT, "metrics.json")["status"] == "done"
    return out


@pytest.mark.slow
def test_uninterrupted_job_writes_its_report(reference):
    assert [h["step"] for h in load(reference, "points", POINT, "eval_history.json")] == \
        [4, 8, 12]


def assert_preempted_and_resumed(cluster, job, reference):
    info = job.finish()
    log = job.log
    assert (info["JobState"], info["Restarts"]) == ("COMPLETED", "1"), log[-4000:]
    assert log.count("requeueing job") == 1, log[-4000:]
    assert "Exited with exit code 199" in log, log[-4000:]
    records = [load(job.out, *where, "points", POINT, "metrics.json")
               for where in ([], [".worker1"])]
    saved = records[0]["preempted_at"]
    assert len(saved) == 1 and 1 < saved[0] < STEPS, saved
    for record in records:  # both workers saved the one agreed step and resumed from it
        assert (record["preempted_at"], record["resumed_from"]) == (saved, saved)
    assert_same_results(reference, job.out)


@pytest.mark.slow
def test_sigterm_to_the_job_steps_requeues_once_and_resumes(cluster, reference, tmp_path):
    job = Job(cluster, tmp_path / "out", tmp_path / "logs").submit()
    job.wait_for(MARKER)
    cluster.run("scancel", "--signal=TERM", str(job.id))
    assert_preempted_and_resumed(cluster, job, reference)


@pytest.mark.long
def test_slurm_preemption_by_a_higher_tier_job_requeues_once_and_resumes(
        cluster, reference, tmp_path):
    job = Job(cluster, tmp_path / "out", tmp_path / "logs").submit()
    job.wait_for(MARKER)
    urgent = cluster.submit(None, sbatch_options=[
        "--partition=urgent", "--ntasks=2", "--wrap=true", f"--output={tmp_path}/urgent-%j.out"],
        cwd=str(tmp_path))
    assert_preempted_and_resumed(cluster, job, reference)
    assert cluster.wait(urgent, 60)["JobState"] == "COMPLETED"


@pytest.mark.long
def test_sigterm_to_the_batch_shell_too_requeues_once_and_resumes(cluster, reference,
                                                                  tmp_path):
    job = Job(cluster, tmp_path / "out", tmp_path / "logs").submit()
    job.wait_for(AFTER_FIRST_CHECKPOINT)
    cluster.run("scancel", "--signal=TERM", "--full", str(job.id))
    info = job.finish()
    log = job.log
    assert (info["JobState"], info["Restarts"]) == ("COMPLETED", "1"), log[-4000:]
    assert "batch shell: SIGTERM received" in log and "forcing job termination" in log, log
    assert log.count("requeueing job") == 1, log[-4000:]
    record = load(job.out, "points", POINT, "metrics.json")
    assert record["preempted_at"] == []  # srun's SIGKILL: no agreed step
    resumed = record["resumed_from"]  # the last periodic checkpoint before the SIGTERM
    assert len(resumed) == 1 and resumed[0] > 0 and resumed[0] % CHECKPOINT_EVERY == 0, resumed
    assert_same_results(reference, job.out)


def task_pid(out: str, procid: int) -> int:
    """The sweep process of SLURM task `procid` writing `out`."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except OSError:
            continue
        if out.encode() in cmd and b"experiments" in cmd and \
                env.get(b"SLURM_PROCID") == str(procid).encode():
            return int(pid)
    raise AssertionError(f"no task {procid} writing {out}")


@pytest.mark.long
def test_a_lost_task_ends_the_job_in_time_and_a_rerun_resumes(cluster, reference, tmp_path):
    job = Job(cluster, tmp_path / "out", tmp_path / "logs").submit()
    job.wait_for(AFTER_FIRST_CHECKPOINT)
    os.kill(task_pid(job.out, 1), signal.SIGKILL)
    killed = time.monotonic()
    info = job.finish(timeout_s=LOST_TASK_LIMIT_S)
    ended_after = time.monotonic() - killed
    log = job.log
    assert info["JobState"] == "FAILED" and info["Restarts"] == "0", log[-4000:]
    assert ended_after < LOST_TASK_LIMIT_S
    assert "a task failed or was lost" in log and "requeueing" not in log, log[-4000:]

    rerun = Job(cluster, job.out, tmp_path / "logs").submit()
    info = rerun.finish()
    assert info["JobState"] == "COMPLETED", rerun.log[-4000:]
    record = load(job.out, "points", POINT, "metrics.json")
    resumed = record["resumed_from"]  # the last periodic checkpoint before the kill
    assert len(resumed) == 1 and resumed[0] > 0 and resumed[0] % CHECKPOINT_EVERY == 0, resumed
    assert_same_results(reference, job.out)
