"""The example cluster submissions (scripts/slurm_sweep.sbatch, scripts/k8s/tfjob_sweep.yaml)
run commands the command line accepts: every flag parses, every --set names a config field,
and the replicator spec is the cluster's."""
import pathlib
import shlex

import pytest
import yaml

from experiments import config as config_lib
from experiments import configs
from experiments.cli import build_parser
from replication.specs import parse_spec

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sbatch_command() -> list[str]:
    text = (ROOT / "scripts" / "slurm_sweep.sbatch").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("srun "))
    words = [w for w in shlex.split(line) if w != "$@"]
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
