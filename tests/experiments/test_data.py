"""Data pipelines: IDX parsing, the [-1, 1] image contract, sharding, determinism, offline TFDS,
image folders and the errors users see when data is missing or broken."""
import gzip
import os
import time

import numpy as np
import pytest
import tensorflow as tf

from experiments import data
from experiments.config import ConfigError, DataConfig
from experiments.data import fashion_mnist as fm

N_SYNTH = 1000


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


def _decode_index(batch_images: np.ndarray) -> np.ndarray:
    """Recover the synthetic example index from padded [-1, 1] images (pixel (0,0) is at 2,2)."""
    pixels = np.rint((batch_images[:, 2, 2:4, 0] + 1.0) * 127.5).astype(int)
    return pixels[:, 0] * 256 + pixels[:, 1]


def _take(ds, n):
    out = [(x.numpy(), y.numpy()) for x, y in ds.take(n)]
    return np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out])


def _ctx(pipeline_id, pipelines=2, replicas=2):
    return tf.distribute.InputContext(num_input_pipelines=pipelines,
                                      input_pipeline_id=pipeline_id,
                                      num_replicas_in_sync=replicas)


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


def test_pad_keeps_every_pixel_and_adds_a_background_frame():
    images, _ = data.load_fashion_mnist_arrays("test")
    padded, labels = data.fashion_mnist_images("test")
    assert padded.shape == (10_000, 32, 32, 1) and padded.dtype == np.float32
    assert labels.dtype == np.int64
    assert (padded.min(), padded.max()) == (-1.0, 1.0)
    frame = np.ones((32, 32), bool)
    frame[2:30, 2:30] = False
    assert np.all(padded[:, frame, 0] == -1.0)
    expected = images.astype(np.float32) / np.float32(127.5) - np.float32(1.0)
    np.testing.assert_array_equal(padded[:, 2:30, 2:30, 0], expected)
    np.testing.assert_array_equal(data.to_model_images(images[:5]),
                                  data.to_model_images(images[:5, :, :, None]))


# -- resize methods, against closed-form answers ------------------------------------------------
def test_resize_keeps_constants_and_is_identity_at_native_size():
    constant = np.full((3, 28, 28), 200, np.uint8)
    np.testing.assert_allclose(data.to_model_images(constant, 32, "resize"), 200 / 127.5 - 1,
                               atol=1e-6)
    rng = np.random.default_rng(0)
    cifar_like = rng.integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)
    np.testing.assert_allclose(data.to_model_images(cifar_like, 32, "resize"),
                               cifar_like / 127.5 - 1, atol=1e-6)


def test_resize_shorter_side_then_centre_crop_matches_linear_ramp():
    # 40x80 image whose value is the column index: the shorter side 40 -> 32 scales by 0.8,
    # width 80 -> 64, the centre crop keeps resized columns 16..47. Bilinear (antialiased)
    # resampling of a linear ramp is linear away from the borders: value = (c + .5) * 1.25 - .5
    # (to within 0.05 grey levels: the discrete antialiasing tent is not exactly symmetric;
    # a crop one column off would be 1.25 levels off).
    ramp = np.tile(np.arange(80, dtype=np.uint8), (1, 40, 1))
    out = data.to_model_images(ramp, 32, "resize_shorter_center_crop")
    assert out.shape == (1, 32, 32, 1)
    expected = ((np.arange(16, 48) + 0.5) * 1.25 - 0.5) / 127.5 - 1.0
    np.testing.assert_allclose(out[0, :, :, 0], np.tile(expected, (32, 1)), atol=0.05 / 127.5)


def test_pad_is_rejected_where_it_cannot_work():
    with pytest.raises(ConfigError, match="resize_shorter_center_crop"):
        data.make_input_fn(DataConfig(name="imagenet2012", resolution=128, resize_method="pad"),
                           8, "train", 0)
    with pytest.raises(ConfigError, match="cannot shrink"):
        data.make_input_fn(DataConfig(name="imagenet_resized/64x64", resolution=32,
                                      resize_method="pad"), 8, "train", 0)


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


def test_missing_data_fails_when_the_pipeline_is_built(tmp_path):
    input_fn = data.make_input_fn(DataConfig(data_dir=str(tmp_path)), 64, "train", seed=0)
    with pytest.raises(data.DatasetError, match=str(tmp_path)):
        input_fn(None)


# -- the in-memory pipeline: contract, sharding, epochs, determinism ----------------------------
def test_real_fashion_mnist_batches_follow_the_contract():
    ds = data.make_input_fn(DataConfig(), 64, "train", seed=0)(_ctx(0, pipelines=1))
    images_spec, labels_spec = ds.element_spec
    assert images_spec == tf.TensorSpec([32, 32, 32, 1], tf.float32)  # 64 over 2 replicas
    assert labels_spec == tf.TensorSpec([32], tf.int32)
    images, labels = _take(ds, 4)
    assert -1.0 <= images.min() and images.max() <= 1.0 and images.max() > 0.9
    assert set(labels.tolist()) <= set(range(10))


def test_two_input_pipelines_get_disjoint_shards(synth_dir):
    cfg = DataConfig(data_dir=synth_dir)
    seen = []
    for pipeline_id in (0, 1):
        ds = data.make_input_fn(cfg, 20, "train", seed=3, repeat=False)(_ctx(pipeline_id))
        images, labels = _take(ds, -1)
        index = _decode_index(images)
        assert len(index) == N_SYNTH // 2
        np.testing.assert_array_equal(np.sort(index), np.arange(pipeline_id, N_SYNTH, 2))
        np.testing.assert_array_equal(labels, index % 10)  # images and labels stay paired
        seen.append(index)
    assert not set(seen[0]) & set(seen[1])


def test_each_epoch_is_a_fresh_permutation_and_order_is_seeded(synth_dir):
    cfg = DataConfig(data_dir=synth_dir)
    images, _ = _take(data.make_input_fn(cfg, 100, "train", seed=7)(None), 20)
    first, second = _decode_index(images[:N_SYNTH]), _decode_index(images[N_SYNTH:])
    np.testing.assert_array_equal(np.sort(first), np.arange(N_SYNTH))
    np.testing.assert_array_equal(np.sort(second), np.arange(N_SYNTH))
    assert (first != second).mean() > 0.9 and (first != np.arange(N_SYNTH)).mean() > 0.9
    again, _ = _take(data.make_input_fn(cfg, 100, "train", seed=7)(None), 20)
    np.testing.assert_array_equal(images, again)
    other, _ = _take(data.make_input_fn(cfg, 100, "train", seed=8)(None), 10)
    assert (_decode_index(other) != first).mean() > 0.9


def test_skip_batches_resumes_exactly_across_an_epoch_boundary(synth_dir):
    # One pipeline feeding 2 replicas: a global batch of 20 is two pipeline batches of 10, so
    # 47 global batches = 940 of the 1000 examples; the next 13 batches cross into epoch 2.
    cfg = DataConfig(data_dir=synth_dir)
    ctx = _ctx(0, pipelines=1, replicas=2)
    full, full_labels = _take(data.make_input_fn(cfg, 20, "train", seed=5)(ctx), 107)
    resumed, labels = _take(data.make_input_fn(cfg, 20, "train", seed=5, skip_batches=47)(ctx),
                            13)
    np.testing.assert_array_equal(resumed, full[940:])
    np.testing.assert_array_equal(labels, full_labels[940:])


def test_unshuffled_pipeline_reads_in_file_order_with_the_numpy_transform(synth_dir):
    cfg = DataConfig(data_dir=synth_dir)
    ds = data.make_input_fn(cfg, 50, "test", seed=0, repeat=False, shuffle=False)(None)
    images, labels = _take(ds, -1)
    reference, ref_labels = data.fashion_mnist_images("test", data_dir=synth_dir)
    np.testing.assert_array_equal(images, reference)
    np.testing.assert_array_equal(labels, ref_labels)


# -- TFDS, offline only -------------------------------------------------------------------------
@pytest.fixture()
def no_downloads(monkeypatch):
    """Any attempt to download or prepare a TFDS dataset fails the test."""
    import tensorflow_datasets as tfds

    def forbidden(*args, **kwargs):
        raise AssertionError("a TFDS download was attempted")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", forbidden)
    return tfds


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
        images, labels = _take(ds, 4)  # 16 > 12: crosses an epoch boundary
    assert ds.element_spec == (tf.TensorSpec([4, resolution, resolution, 3], tf.float32),
                               tf.TensorSpec([4], tf.int32))
    assert -1.0 <= images.min() < -0.9 and 0.9 < images.max() <= 1.0
    assert labels.min() >= 0 and labels.max() < classes


def test_fashion_mnist_can_come_from_tfds_on_request(no_downloads):
    cfg = DataConfig(source="tfds")
    with no_downloads.testing.mock_data(num_examples=4):
        ds = data.make_input_fn(cfg, 4, "train", seed=0)(None)
        images, _ = _take(ds, 1)
    assert ds.element_spec[0] == tf.TensorSpec([4, 32, 32, 1], tf.float32)
    assert np.all(images[:, :2] == -1.0) and np.all(images[:, :, -2:] == -1.0)  # padded


def test_tfds_pipelines_shard_disjointly(no_downloads):
    cfg = DataConfig(name="cifar10", resolution=32, resize_method="resize")
    digests = []
    with no_downloads.testing.mock_data(num_examples=12):
        for pipeline_id in (0, 1):
            ds = data.make_input_fn(cfg, 6, "train", seed=1, repeat=False)(_ctx(pipeline_id))
            images, _ = _take(ds, -1)
            assert len(images) == 6
            digests.append({image.tobytes() for image in images})
    assert len(digests[0]) == len(digests[1]) == 6 and not digests[0] & digests[1]


def test_tfds_skip_batches_resumes_exactly(no_downloads):
    cfg = DataConfig(name="cifar10", resolution=32, resize_method="resize", shuffle_buffer=5)
    with no_downloads.testing.mock_data(num_examples=12):
        full, _ = _take(data.make_input_fn(cfg, 4, "train", seed=2)(None), 7)
        resumed, _ = _take(data.make_input_fn(cfg, 4, "train", seed=2, skip_batches=4)(None), 3)
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


# -- image folders ------------------------------------------------------------------------------
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
    images, labels = _take(data.make_input_fn(cfg, 3, "train", seed=0)(_ctx(0, 1, 1)), 6)
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
