"""Fashion-MNIST's IDX files: counts, classes and pixels of the real files, where the files are
looked for, and what broken files say."""
import gzip
import os

import numpy as np
import pytest
from dataset_helpers import N_SYNTH

from experiments import data
from experiments.config import DataConfig
from experiments.data import fashion_mnist as fm


# -- the real Fashion-MNIST IDX files -----------------------------------------------------------
@pytest.mark.parametrize("split,count,first_labels,mean", [
    ("train", 60_000, [9, 0, 0, 3, 0, 2, 7, 2, 5, 5], 0.28604),
    ("test", 10_000, [9, 2, 1, 1, 6, 1, 4, 6, 5, 7], 0.28685),
])
def test_fashion_mnist_idx_counts_shapes_classes_pixels(split, count, first_labels, mean):
    images, labels = data.load_fashion_mnist_arrays(split)
    assert images.shape == (count, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (count,) and labels.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(labels, minlength=10), [count // 10] * 10)
    assert (images.min(), images.max()) == (0, 255)
    assert labels[:10].tolist() == first_labels
    assert images.mean() / 255 == pytest.approx(mean, abs=1e-5)  # published 0.2860 (train)
    assert data.dataset_size(DataConfig(), split) == count  # from the header alone


# -- where files are looked for, and what broken files say --------------------------------------
def test_data_dir_beats_env_var_beats_default(synth_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("FASHION_MNIST_DIR", synth_dir)
    assert len(data.load_fashion_mnist_arrays("train")[1]) == N_SYNTH
    assert fm.resolve_dir(None) == synth_dir
    monkeypatch.delenv("FASHION_MNIST_DIR")
    assert fm.resolve_dir(None) == data.DEFAULT_FASHION_MNIST_DIR
    with pytest.raises(data.DatasetError) as err:
        data.load_fashion_mnist_arrays("train", data_dir=str(tmp_path))
    message = str(err.value)
    assert str(tmp_path / "train-images-idx3-ubyte.gz") in message
    assert "apt-get install dataset-fashion-mnist" in message and "FASHION_MNIST_DIR" in message


def _broken_copy(synth_dir, tmp_path, name, transform):
    for f in os.listdir(synth_dir):
        raw = open(os.path.join(synth_dir, f), "rb").read()
        (tmp_path / f).write_bytes(transform(raw) if f == name else raw)
    return str(tmp_path / name)


def _gz(payload_edit):
    return lambda raw: gzip.compress(payload_edit(gzip.decompress(raw)))


@pytest.mark.parametrize("name,transform,match", [
    ("train-images-idx3-ubyte.gz", lambda raw: raw[: len(raw) // 2], "corrupt, truncated"),
    ("train-images-idx3-ubyte.gz", lambda raw: b"not a gzip file", "corrupt, truncated"),
    ("train-labels-idx1-ubyte.gz", _gz(lambda p: b"\x00\x00\x08\x03" + p[4:]), "magic number"),
    ("train-images-idx3-ubyte.gz", _gz(lambda p: p[:-28]), "header promises"),
    ("train-labels-idx1-ubyte.gz", _gz(lambda p: p[:4] + (999).to_bytes(4, "big") + p[8:1007]),
     "1000 images but"),
])
def test_corrupt_idx_files_name_the_file(synth_dir, tmp_path, name, transform, match):
    path = _broken_copy(synth_dir, tmp_path, name, transform)
    with pytest.raises(data.DatasetError, match=match) as err:
        data.load_fashion_mnist_arrays("train", data_dir=str(tmp_path))
    assert os.path.basename(path) in str(err.value)
