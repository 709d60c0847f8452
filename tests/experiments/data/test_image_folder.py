"""Image folders: one sub-folder per class, labels in sorted class order, any image size, and
errors that name the folder."""
import os

import numpy as np
import pytest
import tensorflow as tf
from dataset_helpers import ctx, take

from experiments import data
from experiments.config import DataConfig

COLOURS = {"cat": (250, 10, 10), "ant": (10, 250, 10), "bee": (10, 10, 250)}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("image_folder")
    for name, colour in COLOURS.items():
        os.makedirs(root / name)
        for i, (h, w) in enumerate([(40, 60), (64, 48), (32, 32)]):
            image = tf.constant(np.broadcast_to(np.uint8(colour), (h, w, 3)).copy())
            if i == 0:
                (root / name / f"{i}.jpg").write_bytes(tf.io.encode_jpeg(image, quality=100)
                                                       .numpy())
            else:
                (root / name / f"{i}.PNG").write_bytes(tf.io.encode_png(image).numpy())
    (root / "cat" / "notes.txt").write_text("not an image")
    return str(root)


def test_image_folder_labels_are_sorted_class_names(folder):
    cfg = DataConfig(name="image_folder", data_dir=folder, resolution=32,
                     resize_method="resize_shorter_center_crop")
    assert data.image_folder_classes(folder) == ["ant", "bee", "cat"]
    assert data.dataset_size(cfg, "train") == 9
    images, labels = take(data.make_input_fn(cfg, 3, "train", seed=0)(ctx(0, 1, 1)), 6)
    assert images.shape == (18, 32, 32, 3) and labels.dtype == np.int32
    for image, label in zip(images, labels):
        colour = np.array(COLOURS[["ant", "bee", "cat"][label]]) / 127.5 - 1
        np.testing.assert_allclose(image.reshape(-1, 3).mean(0), colour, atol=2 / 127.5)
        assert image.std(axis=(0, 1)).max() < 1e-2  # a constant image stays constant


def test_image_folder_errors_name_the_folder(tmp_path):
    missing = DataConfig(name="image_folder", data_dir=str(tmp_path / "nope"),
                         resize_method="resize")
    with pytest.raises(data.DatasetError, match="nope"):
        data.make_input_fn(missing, 4, "train", seed=0)(None)
    with pytest.raises(data.DatasetError, match="no class sub-folders"):
        data.image_folder_classes(str(tmp_path))
