"""sample / export / evaluate on a finished point, from its committed generator weights or
its checkpoints, and their one-line refusals."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from experiments import records
from experiments.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["--batch-size", "8", "--steps", "2", "--protocol", "tiny", "--set", "model.g_ch=8",
        "--set", "model.d_ch=8", "--set", "train.checkpoint_every=1", "--set", "eval.every=0",
        "--set", "eval.replicates=1"]


@pytest.fixture(scope="module")
def point(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "point"
    assert main(["train", *TINY, "--out", str(out)]) == 0
    return out


def test_a_finished_point_carries_its_generator(point):
    record = records.read_record(str(point))
    path = point / record.generator_weights
    assert record.generator_weights == "samples/generator.npz" and path.stat().st_size < 1e6
    from common.files import file_sha256
    assert file_sha256(path) == record.generator_sha256


def test_sample_grid_and_arrays(point, tmp_path, capsys):
    assert main(["sample", "--run", str(point), "--out", str(tmp_path / "g.png")]) == 0
    assert (tmp_path / "g.png").stat().st_size > 1000 and not (tmp_path / "g.pdf").exists()
    assert main(["sample", "--run", str(point), "--classes", "3,9", "--n", "2", "--seed", "5",
                 "--bn-mode", "moving", "--out", str(tmp_path / "s.npz")]) == 0
    with np.load(tmp_path / "s.npz", allow_pickle=False) as z:
        assert z["images"].shape == (2, 2, 32, 32, 1)
        assert z["labels"].tolist() == [[3, 3], [9, 9]] and str(z["bn_mode"]) == "moving"
        first = z["images"].copy()
    # same seed, same samples; from the last checkpoint they equal the committed weights'
    assert main(["sample", "--run", str(point), "--classes", "3,9", "--n", "2", "--seed", "5",
                 "--bn-mode", "moving", "--step", "2", "--out", str(tmp_path / "c.npz")]) == 0
    with np.load(tmp_path / "c.npz", allow_pickle=False) as z:
        np.testing.assert_allclose(z["images"], first, atol=1e-6)
    assert "from checkpoint at step 2" in capsys.readouterr().out


def test_evaluate_and_sample_work_without_checkpoints(point, tmp_path):
    copy = tmp_path / "committed"
    shutil.copytree(point, copy, ignore=shutil.ignore_patterns("checkpoints", "tensorboard"))
    assert main(["evaluate", "--run", str(copy), "--bn-mode", "standing"]) == 0
    record = records.read_record(str(copy))
    assert set(record.evaluations) == {"tiny/standing"}
    assert record.evaluations["tiny/standing"].protocol.bn_mode == "standing"
    assert main(["sample", "--run", str(copy), "--out", str(tmp_path / "x.npz")]) == 0
    assert main(["sample", "--run", str(copy), "--step", "1",
                 "--out", str(tmp_path / "y.npz")]) == 2  # no checkpoints kept here


def test_export_cli(point, tmp_path):
    out = tmp_path / "saved"
    assert main(["export", "--run", str(point), "--out", str(out), "--bn-mode", "moving"]) == 0
    assert (out / "saved_model.pb").exists()
    assert main(["export", "--run", str(point), "--out", str(out)]) == 2  # not empty


@pytest.mark.parametrize("args, message", [
    (["--classes", "12"], "class index 12 is out of range: this generator has 10 classes"),
    (["--out", "/proc/nope/x.png"], "cannot create /proc/nope"),
    (["--out", "grid.jpg"], "must end with one of .png, .pdf, .npz"),
])
def test_bad_sample_requests_get_one_line(point, tmp_path, args, message):
    argv = ["sample", "--run", str(point), "--out", str(tmp_path / "x.png"), *args]
    proc = subprocess.run([sys.executable, "-m", "experiments", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr


def test_another_extractor_scores_beside_the_points_own(point, tmp_path):
    """`evaluate --classifier` keeps the second extractor's scores under their own key; the
    point's own scores and keys are untouched, and the same generator scores differently."""
    copy = tmp_path / "committed"
    shutil.copytree(point, copy, ignore=shutil.ignore_patterns("checkpoints", "tensorboard"))
    own = records.read_record(str(copy))
    assert main(["evaluate", "--run", str(copy), "--bn-mode", "moving"]) == 0
    assert main(["evaluate", "--run", str(copy), "--bn-mode", "moving",
                 "--classifier", "fashion_mnist_resnet"]) == 0
    record = records.read_record(str(copy))
    assert set(record.evaluations) == {"tiny/moving", "tiny/moving/fashion_mnist_resnet"}
    first = record.evaluations["tiny/moving"]
    second = record.evaluations["tiny/moving/fashion_mnist_resnet"]
    assert first.protocol.classifier == "fashion_mnist_classifier"
    assert second.protocol.classifier == "fashion_mnist_resnet"
    assert second.protocol.classifier_version != first.protocol.classifier_version
    assert second.fid != first.fid and 1.0 <= second.is_mean <= 10.0
    assert record.final == own.final


def test_sample_refuses_a_directory_without_weights(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["sample", "--run", str(tmp_path / "empty"), "--out",
                 str(tmp_path / "x.png")]) == 2
    assert "config.json is missing" in capsys.readouterr().err


def test_robustness_scores_a_point_once_and_skips_it_after(point, tmp_path):
    """CAS and the memorisation check go into the record under their keys; a second call
    finds them there and does nothing (small recipe, counts and real side)."""
    from experiments.config import DataConfig, EvalConfig
    from experiments.evaluation import real_row, robustness
    from experiments.evaluation.classifiers import fashion_mnist
    from experiments.records import CasRecipe
    from replication.startup import start_replicator
    copy = tmp_path / "point"
    shutil.copytree(point, copy, ignore=shutil.ignore_patterns("checkpoints", "tensorboard"))
    side = real_row.RealSide(DataConfig(), EvalConfig(), fashion_mnist.load(), tmp_path,
                             train_count=1000, test_count=300)
    recipe = CasRecipe(per_class=5, epochs=1)
    args = (str(copy), side, start_replicator("default"), True, True, recipe, 40)
    keys = robustness.score_point(*args)
    record = records.read_record(str(copy))
    assert keys[0] == recipe.key and sorted(keys[1:]) == sorted(record.memorisation)
    assert len(record.memorisation) == 2
    assert record.cas[recipe.key].n_train == 50 and record.cas[recipe.key].n_test == 300
    pixels = record.memorisation["pixels/n40/p5/seed1234/batch"]
    assert pixels.n_generated == 40 and pixels.n_train == 1000 and pixels.n_test == 300
    assert (copy / "samples" / "closest_pairs_pixels.png").exists()
    assert (copy / "samples" / "closest_pairs_fashion_mnist_classifier.pdf").exists()
    assert robustness.score_point(*args) == []
    assert records.read_record(str(copy)) == record
