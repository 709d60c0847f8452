"""Users' own images: one sub-folder per class, PNG/JPEG (also GIF/BMP) files inside.

    root/[split/]class_name/*.png|*.jpg|*.jpeg

Class ids are the sorted class-folder names' positions (0, 1, ...). If `root` has a sub-folder
named after the requested split (e.g. `root/train`, `root/test`), that folder is read;
otherwise the whole of `root` serves every split (then there is no held-out data, and
reference statistics come from the training images). Only the file list is built in Python;
reading and decoding happen inside tf.data.
"""
from __future__ import annotations

import os

from experiments.data.errors import DatasetError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".bmp")


def split_root(root: str, split: str) -> str:
    if not os.path.isdir(root):
        raise DatasetError(f"image folder {root} does not exist. Set data.data_dir to a "
                           "directory with one sub-folder of PNG/JPEG images per class.")
    candidate = os.path.join(root, split)
    return candidate if os.path.isdir(candidate) else root


def image_folder_classes(root: str, split: str = "train") -> list[str]:
    """Sorted class-folder names; a class's id is its position in this list."""
    folder = split_root(root, split)
    classes = sorted(d for d in os.listdir(folder)
                     if os.path.isdir(os.path.join(folder, d)) and not d.startswith("."))
    if not classes:
        raise DatasetError(f"image folder {folder} has no class sub-folders. Expected "
                           f"{folder}/<class_name>/<image>.png|jpg.")
    return classes


def image_folder_files(root: str, split: str = "train") -> tuple[list[str], list[int]]:
    """(paths, labels), sorted by class then file name."""
    folder = split_root(root, split)
    paths, labels = [], []
    for label, name in enumerate(image_folder_classes(root, split)):
        class_dir = os.path.join(folder, name)
        files = sorted(f for f in os.listdir(class_dir)
                       if f.lower().endswith(IMAGE_EXTENSIONS) and not f.startswith("."))
        paths += [os.path.join(class_dir, f) for f in files]
        labels += [label] * len(files)
    if not paths:
        raise DatasetError(f"image folder {folder} has class folders but no images with "
                           f"extensions {IMAGE_EXTENSIONS}.")
    return paths, labels


def image_folder_examples(root: str, split: str):
    """(file path, int32 label), in sorted order; files are read after sharding/shuffling."""
    import tensorflow as tf
    paths, labels = image_folder_files(root, split)
    return tf.data.Dataset.from_tensor_slices((paths, tf.constant(labels, tf.int32)))
