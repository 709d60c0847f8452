"""Fixtures shared by the data-layer tests: a synthetic Fashion-MNIST IDX directory and a TFDS
that refuses to download."""
import gzip
import os

import numpy as np
import pytest
from dataset_helpers import N_SYNTH

from experiments.data import fashion_mnist as fm


def _idx_bytes(array: np.ndarray, magic: int) -> bytes:
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def _write_idx(directory, split, images, labels):
    prefix = fm.SPLIT_PREFIX[split]
    with gzip.open(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(_idx_bytes(images, fm.IMAGE_MAGIC))
    with gzip.open(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(_idx_bytes(labels, fm.LABEL_MAGIC))


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    """A Fashion-MNIST-shaped IDX dir whose image i carries i in pixels (0,0), (0,1)."""
    directory = tmp_path_factory.mktemp("synth_fmnist")
    index = np.arange(N_SYNTH)
    images = np.zeros((N_SYNTH, 28, 28), np.uint8)
    images[:, 0, 0], images[:, 0, 1] = index // 256, index % 256
    images[:, 5:20, 5:20] = 255
    for split in ("train", "test"):
        _write_idx(directory, split, images, index % 10)
    return str(directory)


@pytest.fixture()
def no_downloads(monkeypatch):
    """Any attempt to download or prepare a TFDS dataset fails the test."""
    import tensorflow_datasets as tfds

    def forbidden(*args, **kwargs):
        raise AssertionError("a TFDS download was attempted")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", forbidden)
    return tfds
