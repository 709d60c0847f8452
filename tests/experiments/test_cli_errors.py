"""Every bad input through the real command line (a subprocess): exit code 2, exactly one line
on stderr, no traceback, nothing changed on disk, and (for input errors) no TensorFlow import.

Not covered: a classifier whose weights do not match their recorded hash. The classifier's
weights path is not configurable (no option or environment variable points at another copy),
and the test must not tamper with the shipped asset; the same WeightsError path is exercised
below with a point's generator weights, and in
tests/experiments/evaluation/classifiers/test_fashion_mnist.py in-process.
"""
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from experiments import records
from experiments.config import SweepAxes
from experiments.configs import preset
from experiments.running import lock, sweep_dir
from experiments.running.sweep import SweepSpec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reporting"))
from fake_results import fake_point, fake_sweep  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--protocol", "tiny", "--set", "model.g_ch=8", "--set", "model.d_ch=8"]
CUSTOM = ["--set", "eval.protocol=custom"]
LOCK_HOLDER = "python -m experiments sweep --out locked"


def bad(name, argv, expected, env=None, tensorflow=False):
    """A row: the command, text its error line must contain, extra environment, and whether
    it may import TensorFlow (only errors that need a model loaded)."""
    return pytest.param(argv, expected, env or {}, tensorflow, id=name)


ROWS = [
    bad("steps 0", ["sweep", "--steps", "0"], "--steps: must be >= 1, got 0"),
    bad("steps not an int", ["train", "--steps", "ten"], "expected an integer, got 'ten'"),
    bad("n-dis negative", ["sweep", "--n-dis", "-2"], "--n-dis: must be >= 1"),
    bad("batch 0", ["train", "--batch-size", "0"], "--batch-size: must be >= 1"),
    bad("negative seed", ["sweep", "--seeds", "0,-1"], "--seeds: must be >= 0"),
    bad("repeated batch", ["sweep", "--batch-sizes", "8,8"], "repeated value"),
    bad("cpu:0", ["sweep", "--replicator", "cpu:0"], "'cpu:0'"),
    bad("bad replicator", ["train", "--replicator", "gpus"], "replicator spec 'gpus'"),
    bad("unknown preset", ["sweep", "--preset", "mnist"], "invalid choice: 'mnist'"),
    bad("unknown protocol", ["evaluate", "--run", "x", "--protocol", "huge"], "invalid choice"),
    bad("unknown subcommand", ["swep"], "invalid choice: 'swep'"),
    bad("classifier epochs 0", ["train-classifier", "--epochs", "0"], "--epochs: must be >= 1"),
    bad("unknown config key", ["sweep", "--set", "train.bogus=1"], "unknown config key"),
    bad("not key=value", ["train", "--set", "train.steps"], "not of the form section.field=value"),
    bad("unknown dataset", ["sweep", "--set", "data.name=mnist"], "data.name='mnist'"),
    bad("wrong type", ["sweep", "--set", "train.steps=abc"], "has the wrong type"),
    bad("bool for int", ["train", "--set", "train.n_dis=true"], "has the wrong type"),
    bad("bool for a sweep's batch", ["sweep", "--set", "train.global_batch_size=true"],
        "train.global_batch_size=True has the wrong type (expected int)"),
    bad("batch vs replicas", ["sweep", "--replicator", "cpu:3", "--batch-sizes", "8"],
     "not divisible by the 3 replicas"),
    bad("eval batch vs replicas", ["sweep", "--replicator", "cpu:3", "--batch-sizes", "24"],
     "eval.batch_size=512 is not divisible by the 3 replicas"),
    bad("num_real too large", ["sweep", *CUSTOM, "--set", "eval.num_real=20000"],
     "eval.num_real <= 10000"),
    bad("no such split", ["train", *CUSTOM, "--set", "eval.reference_split=valid"],
     "no split 'valid'"),
    bad("batch larger than data", ["train", "--batch-size", "65536"], "at most 60000"),
    bad("kid subsets too large", ["train", *TINY, "--set", "eval.kid_subsets=400"],
     "use eval.kid_subsets <= 250"),
    bad("standing batches 0", ["sweep", "--set", "eval.standing_batches=0"],
     "eval.standing_batches=0"),
    bad("xla on cpu replicas", ["sweep", "--replicator", "cpu:2", "--set",
                             "train.jit_compile=true"], "train.jit_compile=true with 'cpu:2'"),
    bad("missing data", ["sweep", "--dry-run"], "Fashion-MNIST file not found",
     {"FASHION_MNIST_DIR": "no_data_here"}),
    bad("sweep --out a file", ["sweep", "--out", "afile"], "is a file, not a directory"),
    bad("train --out a file", ["train", *TINY, "--out", "afile"], "is a file, not a directory"),
    bad("report missing dir", ["report", "no_such_dir"], "does not exist"),
    bad("report typo", ["report", "sweep_out/points"], "holds no points/ directory"),
    bad("evaluate missing dir", ["evaluate", "--run", "no_such_dir"], "does not exist"),
    bad("evaluate without config", ["evaluate", "--run", "empty"], "config.json is missing"),
    bad("evaluate without weights", ["evaluate", "--run", "sweep_out/points/bs0016_seed0"],
     "no checkpoint and no committed generator weights"),
    bad("evaluate replicas", ["evaluate", "--run", "sweep_out/points/bs0016_seed0",
                           "--replicator", "cpu:3"], "eval.batch_size=512 is not divisible"),
    bad("sample without config", ["sample", "--run", "empty", "--out", "x.png"],
     "config.json is missing"),
    bad("sample bad suffix", ["sample", "--run", "tampered/points/bs0016_seed0", "--out",
                           "x.gif"], "must end with one of"),
    bad("sample n 0", ["sample", "--run", "tampered/points/bs0016_seed0", "--out", "x.png",
                    "--n", "0"], "--n: must be >= 1"),
    bad("export into a non-empty dir", ["export", "--run", "tampered/points/bs0016_seed0",
                                     "--out", "sweep_out"], "exists and is not empty"),
    bad("locked sweep --out", ["sweep", *TINY, "--batch-sizes", "8", "--out", "locked"],
     f"is in use by process {os.getpid()} ({LOCK_HOLDER})"),
    bad("locked train --out", ["train", *TINY, "--out", "locked"],
     f"is in use by process {os.getpid()}"),
    bad("noise-scale measuring off", ["noise-scale", "--set", "train.noise_scale_every=0"],
     "needs train.noise_scale_every > 0"),
    bad("locked noise-scale --out", ["noise-scale", *TINY, "--out", "locked"],
     f"is in use by process {os.getpid()}"),
    bad("sweep.json mismatch", ["sweep", "--steps", "5", "--batch-sizes", "16,64,512", "--out",
                             "sweep_out"], "sweep.json differs in base.train.steps"),
    bad("finished point, other config", ["train", "--batch-size", "16", "--steps", "7", "--out",
                                      "sweep_out/points/bs0016_seed0"],
     "holds a finished result made with a different config"),
    bad("generator hash mismatch", ["sample", "--run", "tampered/points/bs0016_seed0", "--out",
                                 "x.png"], "does not match its recorded SHA-256", tensorflow=True),
]


def tree_hash(root) -> str:
    """Every path, file content and mode under `root`."""
    h = hashlib.sha256()
    for directory, dirs, names in sorted(os.walk(root)):
        dirs.sort()
        h.update(os.path.relpath(directory, root).encode())
        for name in sorted(names):
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                h.update(f"{name}:{os.stat(path).st_mode}:".encode() + f.read())
    return h.hexdigest()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("cli_errors")
    fake_sweep(str(ws / "sweep_out"))
    base = preset("fashion_mnist", {"train.steps": 4})
    spec = SweepSpec(base, SweepAxes(batch_sizes=(16, 64, 512)))
    sweep_dir.claim(str(ws / "sweep_out"), spec.to_dict())
    (ws / "afile").write_text("not a directory")
    os.makedirs(ws / "empty")
    fake_point(str(ws / "tampered"), 16, 0, 3.0, 80.0)  # its generator.npz was changed
    run = str(ws / "tampered" / "points" / "bs0016_seed0")
    (ws / "tampered" / "points" / "bs0016_seed0" / "samples" / "generator.npz").write_bytes(
        b"changed after it was recorded")
    records.write_record(run, records.read_record(run).replace(
        generator_weights=records.GENERATOR, generator_sha256="0" * 64))
    lock.lock_dir(str(ws / "locked"), LOCK_HOLDER)  # held by this process for the module
    yield ws
    lock.unlock_dir(str(ws / "locked"))


@pytest.mark.parametrize("argv, expected, env, tf_allowed", ROWS)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(argv, expected, env, tf_allowed,
                                                          workspace):
    before = tree_hash(workspace)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "experiments", *argv],
                          cwd=workspace, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2",
                                   **env))
    lines = proc.stderr.splitlines()
    imported = [line.rsplit("|", 1)[-1].strip() for line in lines
                if line.startswith("import time:")]
    errors = [line for line in lines if not line.startswith("import time:")]
    assert proc.returncode == 2, (proc.returncode, errors, proc.stdout[-2000:])
    assert len(errors) == 1 and errors[0].startswith("error: "), errors
    assert expected in errors[0], errors[0]
    assert "Traceback" not in proc.stderr
    if not tf_allowed:
        assert "tensorflow" not in imported, "validation happened after TensorFlow started"
    assert tree_hash(workspace) == before, "a refused command changed files"


def test_there_are_enough_rows():
    assert len(ROWS) >= 25
    assert {r.values[0][0] for r in ROWS} >= {"sweep", "train", "evaluate", "report", "sample",
                                             "export"}
    assert np.mean([not r.values[3] for r in ROWS]) > 0.9  # most fail before TensorFlow
