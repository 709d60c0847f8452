"""TFDS-backed datasets, strictly offline: read what is prepared, never download.

`tensorflow_datasets` is imported lazily (it costs seconds), only when a TFDS dataset is
actually used. Reading goes through `builder.as_dataset`, which never downloads: a dataset
that is not prepared raises DatasetError at once, naming the directory and the command that
prepares it. Preparing is a separate, explicit step (`prepare_tfds_dataset`, or `tfds build`).

Images are read undecoded (`SkipDecoding`) so that every input pipeline can drop the other
pipelines' examples before paying for JPEG/PNG decoding.
"""
from __future__ import annotations

import tensorflow as tf

from experiments.data.errors import DatasetError

# Our split names -> TFDS split names, where they differ (ImageNet's labelled held-out split
# is called 'validation'; its 'test' split has no labels).
SPLIT_ALIASES = {
    "imagenet2012": {"test": "validation"},
    "imagenet_resized/32x32": {"test": "validation"},
    "imagenet_resized/64x64": {"test": "validation"},
}


def tfds_split(name: str, split: str) -> str:
    return SPLIT_ALIASES.get(name, {}).get(split, split)


def how_to_prepare(name: str, data_dir: str | None) -> str:
    where = f" --data_dir={data_dir}" if data_dir else ""
    text = (f"This suite never downloads at run time. Prepare the dataset once on a machine "
            f"with network access: `tfds build {name}{where}` (TFDS needs the "
            "`importlib_resources` package for this), then point data.data_dir at that "
            "directory (default: $TFDS_DATA_DIR or ~/tensorflow_datasets).")
    if name == "imagenet2012":
        text += (" ImageNet cannot be downloaded automatically: put ILSVRC2012_img_train.tar and "
                 "ILSVRC2012_img_val.tar (from image-net.org) in a directory and run `tfds build "
                 f"imagenet2012 --manual_dir=THAT_DIR{where}` or set data.manual_dir=THAT_DIR and "
                 "call experiments.data.prepare_tfds_dataset.")
    return text


def _builder(name: str, data_dir: str | None):
    import tensorflow_datasets as tfds

    # try_gcs=False (the default, stated for the reader): no lookup in the public bucket.
    return tfds.builder(name, data_dir=data_dir, try_gcs=False)


def tfds_examples(name: str, split: str, data_dir: str | None, *, shuffle_files: bool,
                  seed: int) -> tf.data.Dataset:
    """(encoded image bytes, int32 label) in an order fixed by `seed`, identical in every
    input pipeline (so that `Dataset.shard` gives disjoint pipelines)."""
    import tensorflow_datasets as tfds

    builder = _builder(name, data_dir)
    try:
        ds = builder.as_dataset(
            split=tfds_split(name, split), shuffle_files=shuffle_files,
            decoders={"image": tfds.decode.SkipDecoding()},
            read_config=tfds.ReadConfig(shuffle_seed=seed))
    except AssertionError as e:  # TFDS's "could not find data in ..." error
        raise DatasetError(f"TFDS dataset {name!r} is not prepared in {builder.data_dir} "
                           f"({e}). {how_to_prepare(name, data_dir)}") from None
    except (KeyError, ValueError) as e:  # unknown split
        raise DatasetError(f"TFDS dataset {name!r} in {builder.data_dir}: cannot read split "
                           f"{split!r} ({e}).") from None
    return ds.map(lambda ex: (ex["image"], tf.cast(ex["label"], tf.int32)))


def tfds_size(name: str, split: str, data_dir: str | None) -> int:
    builder = _builder(name, data_dir)
    try:
        return int(builder.info.splits[tfds_split(name, split)].num_examples)
    except KeyError as e:
        raise DatasetError(f"TFDS dataset {name!r} has no prepared split {split!r} in "
                           f"{builder.data_dir} ({e}). {how_to_prepare(name, data_dir)}") from None


def prepare_tfds_dataset(name: str, data_dir: str | None = None, manual_dir: str | None = None,
                         allow_download: bool = False) -> str:
    """Explicit, user-invoked preparation; returns the prepared directory.

    Offline by default: only builds from `manual_dir` (ImageNet's tar files). With
    `allow_download=True` TFDS fetches the sources (needs network).
    """
    import tensorflow_datasets as tfds

    builder = _builder(name, data_dir)
    if builder.is_prepared():
        return str(builder.data_dir)
    if manual_dir is None and not allow_download:
        raise DatasetError(f"TFDS dataset {name!r} is not prepared in {builder.data_dir} and "
                           f"downloading was not allowed. {how_to_prepare(name, data_dir)}")
    config = tfds.download.DownloadConfig(manual_dir=manual_dir, try_download_gcs=False)
    builder.download_and_prepare(download_config=config)
    return str(builder.data_dir)
