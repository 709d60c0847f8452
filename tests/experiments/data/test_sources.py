"""Where examples come from: 'auto' picks each dataset's usual source, an explicit source wins,
and a source describes the files it reads (the reference-statistics cache key)."""
import os

import numpy as np
import pytest
import tensorflow as tf
from dataset_helpers import take

from experiments import data
from experiments.config import DataConfig
from experiments.data import sources


@pytest.mark.parametrize("cfg,kind", [
    (DataConfig(), "idx"),
    (DataConfig(source="tfds"), "tfds"),
    (DataConfig(name="cifar10", resolution=32, resize_method="resize"), "tfds"),
    (DataConfig(name="imagenet2012", resolution=128, resize_method="resize_shorter_center_crop"),
     "tfds"),
    (DataConfig(name="image_folder", data_dir="pics", resize_method="resize"), "folder"),
])
def test_auto_picks_the_usual_source_and_an_explicit_one_wins(cfg, kind):
    assert sources.resolve(cfg) == sources.Source(kind, cfg.data_dir)


def test_each_source_names_the_files_it_reads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FASHION_MNIST_DIR", "idx_files")  # relative: made absolute
    assert sources.Source("idx", None).describe() == f"idx:{tmp_path / 'idx_files'}"
    assert sources.Source("idx", "/data/fm").describe() == "idx:/data/fm"
    assert sources.Source("folder", "pics").describe() == f"folder:{tmp_path / 'pics'}"
    assert sources.Source("tfds", None).describe() == "tfds:default"
    assert sources.Source("tfds", "tfds").describe() == f"tfds:{os.path.join(tmp_path, 'tfds')}"


def test_fashion_mnist_can_come_from_tfds_on_request(no_downloads):
    cfg = DataConfig(source="tfds")
    with no_downloads.testing.mock_data(num_examples=4):
        ds = data.make_input_fn(cfg, 4, "train", seed=0)(None)
        images, _ = take(ds, 1)
    assert ds.element_spec[0] == tf.TensorSpec([4, 32, 32, 1], tf.float32)
    assert np.all(images[:, :2] == -1.0) and np.all(images[:, :, -2:] == -1.0)  # padded
