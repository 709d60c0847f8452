"""One image transform for every dataset: uint8 pixels -> float32 in [-1, 1] at the model size.

The same TensorFlow function runs inside the tf.data pipelines (on a batch or on one image)
and behind `to_model_images` (numpy in, numpy out), so reference statistics computed from
numpy arrays see bit-for-bit the pixels the GAN trains on.

Methods (recorded in `DataConfig.resize_method`):
  pad                         centre the native image on a background of -1 (black); exact.
  resize                      bilinear (antialiased) to resolution x resolution; aspect ratio
                              is not kept (for square sources such as CIFAR-10 it is the
                              identity at native size).
  resize_shorter_center_crop  bilinear resize of the shorter side to `resolution`, then a
                              central square crop (the usual ImageNet 128x128 protocol).

Why Fashion-MNIST is padded 28 -> 32 rather than resized: padding keeps every pixel exactly as
recorded (no interpolation blur that the GAN would then have to imitate), adds only the data's
own background value (0, i.e. -1 after scaling), and is exactly invertible: cropping 2 pixels
per side recovers the original 28x28 image, so a 28x28 classifier or a visual comparison sees
real and generated images through the same, lossless, transform. 32 = 4 * 2^3 is what the
SN-GAN ResNet (4x4 start, three up-sampling blocks) needs, shared with CIFAR-10; LeNet-5
padded MNIST to 32x32 for the same reason. (About 19% of the pixels in the outer two rows
are non-zero in Fashion-MNIST, so garments can touch the 28x28 edge; the padded frame is
still pure background.)
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from experiments.config import RESIZE_METHODS, ConfigError


def check_method(method: str, resolution: int, native: int | None, name: str) -> None:
    """Fail early on combinations that cannot work (e.g. padding an image larger than the
    target, or padding images whose size is only known per example)."""
    if method not in RESIZE_METHODS:
        raise ConfigError(f"resize method {method!r} is not one of {list(RESIZE_METHODS)}")
    if method == "pad":
        if native is None:
            raise ConfigError(f"data.resize_method='pad' needs a fixed native size, but {name} "
                              "images vary in size; use 'resize_shorter_center_crop' or "
                              "'resize'")
        if native > resolution:
            raise ConfigError(f"data.resize_method='pad' cannot shrink {name}'s {native}x{native}"
                              f" images to {resolution}x{resolution}; use 'resize'")


def preprocess_images(images: tf.Tensor, resolution: int, method: str) -> tf.Tensor:
    """uint8 [H,W,C] or [N,H,W,C] -> float32 [.., resolution, resolution, C] in [-1, 1]."""
    x = tf.cast(images, tf.float32)
    if method == "pad":
        height, width = x.shape[-3], x.shape[-2]
        if height is None or width is None:
            raise ConfigError("resize_method='pad' needs statically known image sizes")
        if height > resolution or width > resolution:
            raise ConfigError(f"cannot pad {height}x{width} images to {resolution}x{resolution}")
        top, left = (resolution - height) // 2, (resolution - width) // 2
        paddings = [[top, resolution - height - top], [left, resolution - width - left], [0, 0]]
        paddings = [[0, 0]] * (x.shape.rank - 3) + paddings
        return tf.pad(x / 127.5 - 1.0, paddings, constant_values=-1.0)
    if method == "resize":
        x = tf.image.resize(x, [resolution, resolution], method="bilinear", antialias=True)
    elif method == "resize_shorter_center_crop":
        x = _resize_shorter_center_crop(x, resolution)
    else:
        raise ConfigError(f"resize method {method!r} is not one of {list(RESIZE_METHODS)}")
    return tf.clip_by_value(x / 127.5 - 1.0, -1.0, 1.0)


def _resize_shorter_center_crop(x: tf.Tensor, resolution: int) -> tf.Tensor:
    shape = tf.shape(x)
    height, width = shape[-3], shape[-2]
    scale = resolution / tf.cast(tf.minimum(height, width), tf.float64)
    new_h = tf.maximum(resolution, tf.cast(tf.round(tf.cast(height, tf.float64) * scale), tf.int32))
    new_w = tf.maximum(resolution, tf.cast(tf.round(tf.cast(width, tf.float64) * scale), tf.int32))
    x = tf.image.resize(x, tf.stack([new_h, new_w]), method="bilinear", antialias=True)
    top, left = (new_h - resolution) // 2, (new_w - resolution) // 2
    x = x[..., top:top + resolution, left:left + resolution, :]
    return tf.ensure_shape(x, x.shape[:-3].concatenate([resolution, resolution, x.shape[-1]]))


def to_model_images(images, resolution: int = 32, method: str = "pad") -> np.ndarray:
    """uint8 images [N,H,W] or [N,H,W,C] -> float32 numpy [N,resolution,resolution,C] in [-1, 1].

    Runs the pipeline's own transform (see module docstring), in chunks to bound memory.
    """
    images = np.asarray(images)
    if images.ndim == 3:
        images = images[..., None]
    if images.ndim != 4:
        raise ValueError(f"expected images [N,H,W] or [N,H,W,C], got shape {images.shape}")
    chunks = [preprocess_images(tf.constant(images[i:i + 10_000]), resolution, method).numpy()
              for i in range(0, len(images), 10_000)]
    if not chunks:
        return np.zeros((0, resolution, resolution, images.shape[-1]), np.float32)
    return np.concatenate(chunks)
