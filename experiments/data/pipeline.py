"""The one input pipeline of the study: every dataset yields the same shape of batches.

    input_fn(ctx) -> tf.data.Dataset of (images float32 [b, R, R, C] in [-1, 1], labels int32 [b])

with b = the per-replica batch from the `tf.distribute.InputContext` (the global batch when
ctx is None), examples sharded by input-pipeline id, shuffled with a seed, repeated, batched
with drop_remainder (static shapes for the replicated step) and prefetched.

Two sources, one contract:
* In-memory arrays (Fashion-MNIST from IDX): each pipeline keeps every P-th example, then reads
  them in a fresh permutation per epoch from `stateless_shuffle(seed=[seed, epoch])`: an exact
  shuffle (no buffer), independent of TensorFlow's global seed; a resumed run starts at the
  right epoch and offset at once (`skip_batches`), and a checkpointed iterator is small.
* Streams (TFDS, image folders): every pipeline sees the same seeded order and keeps every
  P-th example before decoding; a seeded shuffle buffer (`DataConfig.shuffle_buffer`; the full
  path list for image folders) then mixes them. As with any `Dataset.shuffle`, the order also
  depends on the global seed if the caller sets one (`tf.random.set_seed`).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from experiments.config import DATASETS, DataConfig
from experiments.data import fashion_mnist, image_folder, sources, tfds_source
from experiments.data.errors import DatasetError
from experiments.data.preprocess import check_method, preprocess_images

AUTOTUNE = tf.data.AUTOTUNE
InputFn = Callable[["tf.distribute.InputContext | None"], tf.data.Dataset]


def make_input_fn(data_cfg: DataConfig, global_batch_size: int, split: str, seed: int,
                  repeat: bool = True, shuffle: bool = True, skip_batches: int = 0) -> InputFn:
    """An `input_fn(ctx)` for `Strategy.distribute_datasets_from_function` (or ctx=None).

    Deterministic given `seed`. With repeat=False the last incomplete batch is dropped.
    `skip_batches` resumes a run: the number of GLOBAL batches already consumed (e.g.
    steps * n_dis * grad_accumulation); every pipeline skips its share, global_batch_size /
    num_input_pipelines examples per global batch, whatever the replica count. Instant for
    in-memory data (it starts at the right epoch and offset); streams skip examples before
    decoding them. Use it where the iterator itself cannot be checkpointed
    (MirroredStrategy's distributed iterators are not trackable in TF 2.21).
    Errors about the data (missing, unprepared, corrupt) are DatasetError and are raised when
    input_fn is called, i.e. when the strategy builds the pipelines, before any training.
    """
    if global_batch_size <= 0:
        raise ValueError(f"global_batch_size must be > 0, got {global_batch_size}")
    if skip_batches < 0:
        raise ValueError(f"skip_batches must be >= 0, got {skip_batches}")
    check_method(data_cfg.resize_method, data_cfg.resolution, DATASETS[data_cfg.name][2],
                 data_cfg.name)

    def input_fn(ctx: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
        pipelines, pipeline_id = (ctx.num_input_pipelines, ctx.input_pipeline_id) if ctx \
            else (1, 0)
        batch = ctx.get_per_replica_batch_size(global_batch_size) if ctx else global_batch_size
        common = dict(batch=batch, seed=seed, repeat=repeat, shuffle=shuffle,
                      skip_examples=skip_batches * (global_batch_size // pipelines),
                      pipelines=pipelines, pipeline_id=pipeline_id,
                      resolution=data_cfg.resolution, method=data_cfg.resize_method)
        source = sources.resolve(data_cfg)
        if source.kind == "idx":
            images, labels = fashion_mnist.load_fashion_mnist_arrays(split, source.directory)
            ds = _array_pipeline(images, labels, **common)
        else:
            examples, to_uint8, buffer = _stream_source(data_cfg, split, seed, shuffle)
            ds = _stream_pipeline(examples, to_uint8, shuffle_buffer=buffer, **common)
        options = tf.data.Options()
        options.deterministic = True
        return ds.with_options(options)

    return input_fn


def dataset_size(data_cfg: DataConfig, split: str) -> int:
    """Number of examples in a split (all pipelines together); cheap, reads no images."""
    source = sources.resolve(data_cfg)
    if source.kind == "idx":
        return fashion_mnist.fashion_mnist_size(split, source.directory)
    if source.kind == "folder":
        return len(image_folder.image_folder_files(source.directory, split)[0])
    return tfds_source.tfds_size(data_cfg.name, split, source.directory)


def prepare_dataset(data_cfg: DataConfig, allow_download: bool = False) -> str:
    """Check that a dataset is readable, preparing a TFDS dataset if needed; returns where it
    lives. The one place that may download, and only with allow_download=True (a CLI flag);
    ImageNet is built offline from `data_cfg.manual_dir`."""
    source = sources.resolve(data_cfg)
    if source.kind == "idx":
        for split in ("train", "test"):
            fashion_mnist.load_fashion_mnist_arrays(split, source.directory)
        return fashion_mnist.resolve_dir(source.directory)
    if source.kind == "folder":
        image_folder.image_folder_files(source.directory, data_cfg.train_split)
        return source.directory
    return tfds_source.prepare_tfds_dataset(data_cfg.name, source.directory,
                                            data_cfg.manual_dir, allow_download)


def _array_pipeline(images: np.ndarray, labels: np.ndarray, *, batch: int, seed: int,
                    repeat: bool, shuffle: bool, skip_examples: int, pipelines: int,
                    pipeline_id: int, resolution: int, method: str) -> tf.data.Dataset:
    images, labels = images[pipeline_id::pipelines], labels[pipeline_id::pipelines]
    n = len(labels)
    if n < batch:
        raise DatasetError(f"input pipeline {pipeline_id}/{pipelines} has {n} examples, fewer "
                           f"than one batch of {batch}")
    if images.ndim == 3:
        images = images[..., None]
    images_t = tf.constant(images)
    labels_t = tf.constant(labels.astype(np.int32))
    seed_t = tf.constant(seed, tf.int64)

    def epoch_order(epoch):
        order = tf.range(n, dtype=tf.int64)
        if shuffle:
            order = tf.random.experimental.stateless_shuffle(order, seed=tf.stack([seed_t, epoch]))
        return tf.data.Dataset.from_tensor_slices(order)

    def gather(index):
        return (preprocess_images(tf.gather(images_t, index), resolution, method),
                tf.gather(labels_t, index))

    first_epoch, offset = divmod(skip_examples, n)
    epochs = tf.data.Dataset.counter(first_epoch) if repeat else tf.data.Dataset.range(
        first_epoch, 1)
    ds = epochs.flat_map(epoch_order).skip(offset).batch(batch, drop_remainder=True)
    return ds.map(gather, num_parallel_calls=AUTOTUNE, deterministic=True).prefetch(AUTOTUNE)


def _stream_source(data_cfg: DataConfig, split: str, seed: int, shuffle: bool):
    """(examples of (item, int32 label) in a seeded order, item -> uint8 [H,W,C], buffer)."""
    channels, native = data_cfg.channels, DATASETS[data_cfg.name][2]

    def decode(encoded):
        image = tf.io.decode_image(encoded, channels=channels, dtype=tf.uint8,
                                   expand_animations=False)
        return tf.ensure_shape(image, [native, native, channels])

    source = sources.resolve(data_cfg)
    if source.kind == "folder":
        examples = image_folder.image_folder_examples(source.directory, split)
        return examples, lambda path: decode(tf.io.read_file(path)), int(examples.cardinality())
    examples = tfds_source.tfds_examples(data_cfg.name, split, source.directory,
                                         shuffle_files=shuffle, seed=seed)
    return examples, decode, data_cfg.shuffle_buffer


def _stream_pipeline(examples: tf.data.Dataset, to_uint8, *, batch: int, seed: int,
                     repeat: bool, shuffle: bool, skip_examples: int, shuffle_buffer: int,
                     pipelines: int, pipeline_id: int, resolution: int,
                     method: str) -> tf.data.Dataset:
    ds = examples.shard(pipelines, pipeline_id)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    ds = ds.skip(skip_examples)  # before decoding: a resumed run pays only for reading
    ds = ds.map(lambda item, label: (preprocess_images(to_uint8(item), resolution, method),
                                     label),
                num_parallel_calls=AUTOTUNE, deterministic=True)
    return ds.batch(batch, drop_remainder=True).prefetch(AUTOTUNE)
