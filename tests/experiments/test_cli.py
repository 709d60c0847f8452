"""The command line: documented options, dry runs, and one-line errors for bad input."""
import os
import subprocess
import sys

import pytest

from experiments.cli import build_parser, main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_sweep_help_documents_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = capsys.readouterr().out
    for option in ("--preset", "--batch-sizes", "--steps", "--seeds", "--replicator",
                   "--lr-scaling", "--n-dis", "--budget", "--protocol", "--out", "--set"):
        assert option in text


def test_dry_run_lists_points_with_scaled_learning_rates(capsys):
    assert main(["sweep", "--dry-run", "--no-calibration", "--batch-sizes", "16,64,256",
                 "--lr-scaling", "linear", "--steps", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    points = {l.split()[0]: l.split()[1:] for l in lines if l.startswith("bs")}
    assert set(points) == {"bs0016_seed0", "bs0064_seed0", "bs0256_seed0"}
    assert float(points["bs0256_seed0"][1]) == pytest.approx(8e-4)
    assert points["bs0016_seed0"][0] == "10"


@pytest.mark.parametrize("argv, message", [
    (["sweep", "--dry-run", "--set", "train.bogus=1"], "unknown config key 'train.bogus'"),
    (["sweep", "--dry-run", "--replicator", "cpu:4", "--batch-sizes", "6"],
     "not divisible by the 4 replicas"),
    (["train", "--preset", "cifar10", "--set", "eval.classifier=fashion_mnist_classifier"],
     "only scores fashion_mnist"),
])
def test_bad_input_gives_one_line_errors(argv, message, tmp_path):
    """The real command line, as a user runs it (more cases: test_cli_errors.py)."""
    proc = subprocess.run([sys.executable, "-m", "experiments", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert message in proc.stderr
    assert os.listdir(tmp_path) == []  # nothing written


def test_every_subcommand_is_there():
    sub = build_parser()._subparsers._group_actions[0].choices
    assert {"sweep", "train", "evaluate", "report", "reference-stats", "train-classifier",
            "prepare-data"} <= set(sub)
