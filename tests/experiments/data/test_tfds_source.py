"""TFDS datasets, offline only: the batch contract on mock data, sharding, resuming, and
unprepared datasets that fail fast instead of downloading."""
import time

import numpy as np
import pytest
import tensorflow as tf
from dataset_helpers import ctx, take

from experiments import data
from experiments.config import DataConfig


@pytest.mark.parametrize("name,resolution,method,split", [
    ("cifar10", 32, "resize", "train"),
    ("cifar10", 32, "resize", "test"),
    ("imagenet2012", 128, "resize_shorter_center_crop", "train"),
    ("imagenet2012", 128, "resize_shorter_center_crop", "test"),  # TFDS 'validation'
    ("imagenet_resized/32x32", 32, "resize", "train"),
])
def test_tfds_datasets_follow_the_contract_offline(no_downloads, name, resolution, method,
                                                   split):
    cfg = DataConfig(name=name, resolution=resolution, resize_method=method)
    classes = cfg.classes
    with no_downloads.testing.mock_data(num_examples=12):
        ds = data.make_input_fn(cfg, 4, split, seed=0)(None)
        images, labels = take(ds, 4)  # 16 > 12: crosses an epoch boundary
    assert ds.element_spec == (tf.TensorSpec([4, resolution, resolution, 3], tf.float32),
                               tf.TensorSpec([4], tf.int32))
    assert -1.0 <= images.min() < -0.9 and 0.9 < images.max() <= 1.0
    assert labels.min() >= 0 and labels.max() < classes


def test_tfds_pipelines_shard_disjointly(no_downloads):
    cfg = DataConfig(name="cifar10", resolution=32, resize_method="resize")
    digests = []
    with no_downloads.testing.mock_data(num_examples=12):
        for pipeline_id in (0, 1):
            ds = data.make_input_fn(cfg, 6, "train", seed=1, repeat=False)(ctx(pipeline_id))
            images, _ = take(ds, -1)
            assert len(images) == 6
            digests.append({image.tobytes() for image in images})
    assert len(digests[0]) == len(digests[1]) == 6 and not digests[0] & digests[1]


def test_tfds_skip_batches_resumes_exactly(no_downloads):
    cfg = DataConfig(name="cifar10", resolution=32, resize_method="resize", shuffle_buffer=5)
    with no_downloads.testing.mock_data(num_examples=12):
        full, _ = take(data.make_input_fn(cfg, 4, "train", seed=2)(None), 7)
        resumed, _ = take(data.make_input_fn(cfg, 4, "train", seed=2, skip_batches=4)(None), 3)
    np.testing.assert_array_equal(resumed, full[16:])


def test_unprepared_tfds_dataset_fails_fast_without_downloading(no_downloads, tmp_path):
    cfg = DataConfig(name="cifar10", resolution=32, resize_method="resize",
                     data_dir=str(tmp_path))
    start = time.monotonic()
    with pytest.raises(data.DatasetError) as err:
        data.make_input_fn(cfg, 8, "train", seed=0)(None)
    assert time.monotonic() - start < 10
    assert str(tmp_path) in str(err.value) and "tfds build cifar10" in str(err.value)
    with pytest.raises(data.DatasetError, match="downloading was not allowed"):
        data.prepare_dataset(cfg)


def test_imagenet_is_prepared_from_the_manual_dir_only(monkeypatch, tmp_path):
    import tensorflow_datasets as tfds

    calls = []
    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare",
                        lambda self, download_config=None: calls.append(download_config))
    cfg = DataConfig(name="imagenet2012", resolution=128,
                     resize_method="resize_shorter_center_crop", data_dir=str(tmp_path / "tfds"),
                     manual_dir=str(tmp_path / "tars"))
    data.prepare_dataset(cfg)
    assert calls[0].manual_dir == str(tmp_path / "tars") and not calls[0].try_download_gcs
