"""Fashion-MNIST from its four IDX `.gz` files, parsed with numpy (the embedded, offline default).

Where the files are looked for, first match wins: `DataConfig.data_dir` (the `data_dir`
argument), the FASHION_MNIST_DIR environment variable, then the Debian package location
DEFAULT_FASHION_MNIST_DIR. Uncompressed files (same names without `.gz`) are accepted too.
The Debian files are not byte-identical to TFDS's (different gzip headers), which is why we
parse IDX ourselves instead of pointing TFDS at them.
"""
from __future__ import annotations

import functools
import gzip
import os
import zlib

import numpy as np

from experiments.data.errors import DatasetError

DEFAULT_FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
ENV_VAR = "FASHION_MNIST_DIR"
SPLIT_PREFIX = {"train": "train", "test": "t10k"}
NUM_CLASSES = 10
IMAGE_MAGIC, LABEL_MAGIC = 0x00000803, 0x00000801  # ubyte data, 3 dims / 1 dim

HOW_TO_GET = (
    "Get the data with `sudo apt-get install dataset-fashion-mnist` (installs the four "
    f"IDX .gz files in {DEFAULT_FASHION_MNIST_DIR}), or download train-images-idx3-ubyte.gz, "
    "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz from "
    "https://github.com/zalandoresearch/fashion-mnist (data/fashion) into a directory and set "
    f"{ENV_VAR}=DIR or data.data_dir=DIR; or set data.source=tfds (and data.data_dir=DIR for a "
    "non-default TFDS directory) to read a TFDS copy prepared with `tfds build fashion_mnist`.")


def resolve_dir(data_dir: str | None = None) -> str:
    """The directory to read: explicit argument > $FASHION_MNIST_DIR > Debian location."""
    return data_dir or os.environ.get(ENV_VAR) or DEFAULT_FASHION_MNIST_DIR


def _file(directory: str, split: str, kind: str) -> str:
    if split not in SPLIT_PREFIX:
        raise DatasetError(f"Fashion-MNIST has no split {split!r}: its splits are "
                           f"{list(SPLIT_PREFIX)} (set eval.reference_split or "
                           "data.train_split to one of them)")
    ndim = 3 if kind == "images" else 1
    path = os.path.join(directory, f"{SPLIT_PREFIX[split]}-{kind}-idx{ndim}-ubyte.gz")
    if not os.path.exists(path) and os.path.exists(path[:-3]):
        return path[:-3]
    return path


def _read_bytes(path: str, limit: int | None = None) -> bytes:
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read() if limit is None else f.read(limit)
        with open(path, "rb") as f:
            return f.read() if limit is None else f.read(limit)
    except FileNotFoundError:
        raise DatasetError(f"Fashion-MNIST file not found: {path}. {HOW_TO_GET}") from None
    except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError
        raise DatasetError(f"Fashion-MNIST file {path} is corrupt, truncated or unreadable ({e}). "
                           f"Replace it. {HOW_TO_GET}") from None


def _parse_header(raw: bytes, path: str, magic: int) -> tuple[int, ...]:
    ndim = magic & 0xFF
    if len(raw) < 4 + 4 * ndim:
        raise DatasetError(f"{path} is too short for an IDX header ({len(raw)} bytes). "
                           f"Replace it. {HOW_TO_GET}")
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise DatasetError(f"{path} is not an IDX file of the expected kind: magic number "
                           f"0x{found:08x}, expected 0x{magic:08x}. Replace it. {HOW_TO_GET}")
    return tuple(int(d) for d in np.frombuffer(raw, ">i4", count=ndim, offset=4))


def read_idx(path: str, magic: int) -> np.ndarray:
    """Parse one IDX file of unsigned bytes; checks the magic number and the payload size."""
    raw = _read_bytes(path)
    dims = _parse_header(raw, path, magic)
    offset = 4 + 4 * len(dims)
    expected = int(np.prod(dims))
    if len(raw) - offset != expected:
        raise DatasetError(f"{path} holds {len(raw) - offset} data bytes but its header "
                           f"promises {'x'.join(map(str, dims))} = {expected}. Replace it. "
                           f"{HOW_TO_GET}")
    return np.frombuffer(raw, np.uint8, offset=offset).reshape(dims)


@functools.lru_cache(maxsize=4)
def _load(directory: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    images_path, labels_path = _file(directory, split, "images"), _file(directory, split, "labels")
    images = read_idx(images_path, IMAGE_MAGIC)
    labels = read_idx(labels_path, LABEL_MAGIC).astype(np.int64)
    if images.shape[1:] != (28, 28):
        raise DatasetError(f"{images_path} holds {images.shape[1:]} images, expected 28x28")
    if len(images) != len(labels):
        raise DatasetError(f"{images_path} has {len(images)} images but {labels_path} has "
                           f"{len(labels)} labels; one of them is from another split or "
                           "damaged")
    if labels.size and (labels.min() < 0 or labels.max() >= NUM_CLASSES):
        raise DatasetError(f"{labels_path} has labels outside [0, {NUM_CLASSES})")
    images.flags.writeable = False  # cached and shared: nobody may edit them in place
    labels.flags.writeable = False
    return images, labels


def load_fashion_mnist_arrays(split: str, data_dir: str | None = None
                              ) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 [N,28,28], labels int64 [N]); N = 60,000 train / 10,000 test.

    Results are cached per (directory, split) and read-only.
    """
    return _load(os.path.abspath(resolve_dir(data_dir)), split)


def fashion_mnist_size(split: str, data_dir: str | None = None) -> int:
    """Number of examples, read from the label file's header only."""
    path = _file(os.path.abspath(resolve_dir(data_dir)), split, "labels")
    return _parse_header(_read_bytes(path, limit=8), path, LABEL_MAGIC)[0]


def fashion_mnist_images(split: str, resolution: int = 32, method: str = "pad",
                         data_dir: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(float32 [N,resolution,resolution,1] in [-1, 1], int64 labels), exactly as the GAN's
    input pipeline produces them (28x28 padded by 2 pixels of -1 per side at 32)."""
    from experiments.data.preprocess import to_model_images  # TensorFlow
    images, labels = load_fashion_mnist_arrays(split, data_dir)
    return to_model_images(images, resolution, method), labels
