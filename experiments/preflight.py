"""Checks of a run's config against its data, made before TensorFlow starts.

A config can be valid field by field (experiments.config) and still not fit the data it will
read: the reference split may hold fewer images than eval.num_real, a split name may not exist.
Found after TensorFlow has started and the classifier has loaded, such an error costs a
minute; found here it costs milliseconds. Split sizes come from IDX headers and image-folder
listings; a TFDS split's size needs TFDS (and TensorFlow), so it is checked later, when the
reference statistics are computed.
"""
from __future__ import annotations

from experiments.config import ConfigError, DataConfig, RunConfig
from experiments.data import sources


def split_size(data_cfg: DataConfig, split: str) -> int | None:
    """Examples in `split`, read cheaply; None where that needs TensorFlow (TFDS)."""
    source = sources.resolve(data_cfg)
    if source.kind == "idx":
        from experiments.data import fashion_mnist
        return fashion_mnist.fashion_mnist_size(split, source.directory)
    if source.kind == "folder":
        from experiments.data import image_folder
        return len(image_folder.image_folder_files(source.directory, split)[0])
    return None


def check_run(cfg: RunConfig) -> RunConfig:
    """Raises ConfigError (or DatasetError for missing data) if `cfg` cannot run on its data."""
    data, ev = cfg.data, cfg.eval
    size = split_size(data, ev.reference_split)
    if size is not None and ev.num_real > size:
        raise ConfigError(
            f"eval.num_real={ev.num_real} but the {data.name} '{ev.reference_split}' split has "
            f"{size} images: FID and KID compare against the first num_real images of "
            f"eval.reference_split; use eval.protocol=custom with eval.num_real <= {size}, or "
            "another eval.reference_split")
    size = split_size(data, data.train_split)
    batch = cfg.train.global_batch_size
    if size is not None and batch > size:
        raise ConfigError(
            f"global batch {batch} is larger than the {data.name} '{data.train_split}' split "
            f"({size} images): every step needs a full batch of distinct images; use a batch "
            f"of at most {size}")
    return cfg
