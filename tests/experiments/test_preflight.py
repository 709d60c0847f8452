"""Checks against the data before TensorFlow starts: split sizes, split names, missing data."""
import os
import subprocess
import sys

import pytest

from experiments import config as c
from experiments import preflight
from experiments.configs import preset
from experiments.data.errors import DatasetError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cfg(**overrides):
    return preset("fashion_mnist", overrides)


def test_the_presets_fit_fashion_mnist():
    assert preflight.split_size(cfg().data, "test") == 10_000
    assert preflight.split_size(cfg().data, "train") == 60_000
    preflight.check_run(cfg())
    preflight.check_run(cfg(**{"eval.protocol": "standard"}))  # 50k of the train split


@pytest.mark.parametrize("overrides, message", [
    ({"eval.protocol": "custom", "eval.num_real": 10_001}, "eval.num_real <= 10000"),
    ({"eval.protocol": "custom", "eval.reference_split": "valid"}, "no split 'valid'"),
    ({"data.train_split": "tr"}, "no split 'tr'"),
    ({"train.global_batch_size": 65_536}, "at most 60000"),
])
def test_configs_that_do_not_fit_the_data_are_refused(overrides, message):
    with pytest.raises((c.ConfigError, DatasetError), match=message):
        preflight.check_run(cfg(**overrides))


def test_missing_data_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        preflight.check_run(cfg(**{"data.data_dir": str(tmp_path)}))


def test_image_folder_sizes_come_from_the_listing(tmp_path):
    for cls in ("a", "b"):
        os.makedirs(tmp_path / "test" / cls)
        for i in range(3):
            (tmp_path / "test" / cls / f"{i}.png").write_bytes(b"")
    data = c.DataConfig(name="image_folder", data_dir=str(tmp_path), resize_method="resize")
    assert preflight.split_size(data, "test") == 6
    assert preflight.split_size(c.DataConfig(name="cifar10", resize_method="resize"),
                                "test") is None  # TFDS: checked later, with TensorFlow


def test_checks_do_not_import_tensorflow():
    code = ("import sys; from experiments import configs, preflight; "
            "preflight.check_run(configs.preset('fashion_mnist')); "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
