"""The example cluster submissions (scripts/slurm_sweep.sbatch, scripts/k8s/tfjob_sweep.yaml)
run commands the command line accepts: every flag parses, every --set names a config field,
and the replicator spec is the cluster's."""
import os
import pathlib
import subprocess
import tempfile

import pytest
import yaml

from experiments import config as config_lib
from experiments import configs
from experiments.cli import build_parser
from replication.specs import parse_spec

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sbatch_words(settings=None, args=()) -> list[str]:
    """What the job script hands srun, with its defaults (or `settings`): run by bash with a
    stand-in srun that records its arguments."""
    with tempfile.TemporaryDirectory() as tmp:
        record = os.path.join(tmp, "srun_args")
        stub = os.path.join(tmp, "srun")
        with open(stub, "w") as f:
            f.write(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > {record}\n")
        os.chmod(stub, 0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SNGAN_")}
        subprocess.run(["bash", str(ROOT / "scripts" / "slurm_sweep.sbatch"), *args], check=True,
                       env=dict(env, PATH=f"{tmp}:{env['PATH']}", SLURM_SUBMIT_DIR=str(ROOT),
                                SLURM_JOB_ID="1", **(settings or {})), capture_output=True)
        with open(record, "rb") as f:
            return [w.decode() for w in f.read().split(b"\0")[:-1]]


def sbatch_command() -> list[str]:
    words = sbatch_words()
    return words[words.index("-m") + 2:]


def tfjob_command() -> list[str]:
    manifest = yaml.safe_load((ROOT / "scripts" / "k8s" / "tfjob_sweep.yaml").read_text())
    assert manifest["kind"] == "TFJob"
    worker = manifest["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2 and worker["restartPolicy"] == "ExitCode"
    container, = worker["template"]["spec"]["containers"]
    assert container["name"] == "tensorflow"
    command = container["command"]
    return command[command.index("-m") + 2:]


@pytest.mark.parametrize("read,kind", [(sbatch_command, "slurm"), (tfjob_command, "multiworker")])
def test_example_submission_parses(read, kind):
    args = build_parser().parse_args(read())
    assert args.command == "sweep" and parse_spec(args.replicator).kind == kind
    cfg = configs.preset(args.preset, {**config_lib.parse_overrides(args.set),
                                       "train.replicator": args.replicator})
    assert cfg.train.replicator == args.replicator
    assert all(b % 8 == 0 for b in args.batch_sizes)  # 2 workers x 4 GPUs each


def test_sbatch_settings_come_from_the_environment_and_the_command_line():
    gpu = sbatch_words()
    assert gpu[gpu.index("--preset") + 1] == "imagenet128"
    assert "data.data_dir=/data/tensorflow_datasets" in gpu and "--wait=600" in gpu
    cpu = sbatch_words(dict(SNGAN_PRESET="fashion_mnist", SNGAN_BATCH_SIZES="8,16",
                            SNGAN_OUT="runs/cpu", SNGAN_TASK_WAIT="30"), ["--steps", "30"])
    args = build_parser().parse_args(cpu[cpu.index("-m") + 2:])
    assert (args.preset, list(args.batch_sizes), args.out, args.steps) == \
        ("fashion_mnist", [8, 16], "runs/cpu", 30)
    assert "--wait=30" in cpu and not any("data_dir" in w or "inception" in w for w in cpu)

