"""The [-1, 1] image contract: padding keeps every pixel, resize methods against closed-form
answers, and methods refused where they cannot work."""
import numpy as np
import pytest

from experiments import data
from experiments.config import ConfigError, DataConfig


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
