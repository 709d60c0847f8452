"""The command line: documented options, dry runs, and one-line errors for bad input."""
import os
import subprocess
import sys

import pytest

from experiments.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_sweep_help_documents_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    text = capsys.readouterr().out
    for option in ("--preset", "--batch-sizes", "--steps", "--seeds", "--replicator",
                   "--lr-scaling", "--n-dis", "--budget", "--protocol", "--out", "--set",
                   "--precision"):
        assert option in text


def test_dry_run_lists_points_with_scaled_learning_rates(capsys):
    assert main(["sweep", "--dry-run", "--no-calibration", "--batch-sizes", "16,64,256",
                 "--lr-scaling", "linear", "--steps", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    points = {l.split()[0]: l.split()[1:] for l in lines if l.startswith("bs")}
    assert set(points) == {"bs0016_seed0", "bs0064_seed0", "bs0256_seed0"}
    assert float(points["bs0256_seed0"][1]) == pytest.approx(8e-4)
    assert points["bs0016_seed0"][0] == "10"


def test_precision_flag_sets_train_precision():
    from experiments.cli import _overrides, build_parser
    args = build_parser().parse_args(["sweep", "--precision", "bfloat16"])
    assert _overrides(args)["train.precision"] == "bfloat16"
    assert "train.precision" not in _overrides(build_parser().parse_args(["sweep"]))


@pytest.mark.parametrize("argv, message", [
    (["sweep", "--dry-run", "--set", "train.bogus=1"], "unknown config key 'train.bogus'"),
    (["sweep", "--dry-run", "--set", "train.precision=mixed_float16"],
     "needs dynamic loss scaling"),
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


@pytest.mark.parametrize("command", ["sweep", "train", "evaluate", "sample", "export",
                                     "report", "reference-stats", "prepare-data",
                                     "train-classifier", "robustness", "real-row"])
def test_every_subcommand_is_there(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert f"usage: python -m experiments {command}" in capsys.readouterr().out


def test_a_preset_names_a_config_file_and_its_named_sweeps(capsys):
    """The reference run's named sweeps: v2 (its default), six seeds at 64 and 512, and the
    equal-images control, whose point names cannot collide with v2's."""
    def points(*argv):
        assert main(["sweep", "--preset", "fashion_mnist_reference", "--dry-run",
                     "--no-calibration", *argv]) == 0
        lines = capsys.readouterr().out.splitlines()
        return {l.split()[0]: tuple(l.split()[1:]) for l in lines if l.startswith("bs")}

    v2 = points()
    assert len(v2) == 21 and set(v2.values()) == {("1000", "0.0002")}
    assert {"bs0008_seed0", "bs0512_seed2"} <= set(v2)
    assert set(points("--sweep", "more_seeds")) == {
        f"bs{b:04d}_seed{s}" for b in (64, 512) for s in (3, 4, 5)}
    control = points("--sweep", "equal_images")
    assert control == {f"bs0064_seed{s}_equal_images": ("8000", "0.0002") for s in (0, 1, 2)}
    # flags still win over the named sweep's axes
    assert set(points("--sweep", "equal_images", "--seeds", "7", "--steps", "10",
                      "--set", "train.lr_decay_start=5")) == {"bs0064_seed7_equal_images"}
