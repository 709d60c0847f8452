"""SN-GAN ResNet generator and projection discriminator (Miyato & Koyama 2018), NHWC.

Layouts follow pfnet-research/sngan_projection (gen_models/resnet*.py,
dis_models/snresnet*.py):

* G: linear z -> 4x4 x (m0 * g_ch); up-sampling ResBlocks (BN-ReLU-up-conv3x3-BN-ReLU-conv3x3,
  shortcut up-conv1x1) with class-conditional BN; then BN, ReLU, conv3x3 to the image
  channels, tanh.
* D: an "optimised" first block (conv-ReLU-conv-pool, shortcut pool-conv1x1), ResBlocks
  (ReLU-conv-ReLU-conv[-pool], shortcut conv1x1[-pool] when the shape changes), ReLU, global
  SUM pooling, SN linear to one logit plus the projection <embed(y), h>. Every D weight is
  spectrally normalised.
* Initialisation as in the chainer code: Glorot-uniform with gain sqrt(2) on 3x3 convs,
  plain Glorot-uniform on shortcuts, linears and embeddings.
* Same function, less arithmetic: G's up-sample-then-conv3x3 runs as one transposed
  convolution and D's conv3x3-then-pool as one stride-2 convolution (`sngan.layers`), and the
  1x1 shortcuts convolve the smaller map. A preset's training step then runs 0.62-0.67 of the
  multiply-adds of the layout as written (0.58 at 64x64; `sngan.flops` counts both).

`model_cfg` is a `sngan.config.ModelConfig` (`resolution`, one of `sngan.options
.RESOLUTIONS`, `image_channels, num_classes, z_dim, g_ch, d_ch, bn_cross_replica,
g_bn_momentum`). `num_classes == 0` builds the unconditional variant.
`precision` (sngan/precision.py) says where the models compute in bfloat16; float32, the
default, builds exactly the float32 graph. G's plain Keras layers take the precision's Keras
dtype policy; the layers in sngan.layers cast by hand (their docstrings say why).
"""
from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from sngan import precision as precisions
from sngan.layers import (
    ConditionalBatchNorm,
    SNConv2D,
    SNDense,
    SNEmbedding,
    UpsampleConv2D,
    spatial_size,
)


@dataclasses.dataclass(frozen=True)
class Architecture:
    """Channel multipliers of one resolution's G and D (times g_ch / d_ch)."""
    g_widths: tuple[int, ...]  # width at 4x4, then the output width of each up block
    d_blocks: tuple[tuple[int, bool], ...]  # (width, down-samples?) per block; first optimised
    d_head_bias: bool  # the 32x32 SN-GAN head has no bias; the 64/128 ones do


ARCHITECTURES: dict[int, Architecture] = {
    # SN-GAN CIFAR-10 ResNet: constant width, 3 up blocks; D: 2 down blocks + 2 plain ones.
    32: Architecture(g_widths=(1, 1, 1, 1),
                     d_blocks=((1, True), (1, True), (1, False), (1, False)),
                     d_head_bias=False),
    64: Architecture(g_widths=(16, 8, 4, 2, 1),
                     d_blocks=((1, True), (2, True), (4, True), (8, True), (16, True)),
                     d_head_bias=True),
    # sn_projection.yml, ImageNet 128x128 (the TF-Replicator study's model).
    128: Architecture(g_widths=(16, 16, 8, 4, 2, 1),
                      d_blocks=((1, True), (2, True), (4, True), (8, True), (16, True),
                                (16, False)),
                      d_head_bias=True),
}

_BOTTOM = 4  # spatial size of G's first feature map


def _conv_init():
    """chainer GlorotUniform(scale=sqrt(2)): variance x2, i.e. Keras scale 2.0."""
    return keras.initializers.VarianceScaling(2.0, mode="fan_avg", distribution="uniform")


def _sum_2x2_blocks(dy):
    return tf.nn.avg_pool2d(dy, 2, 2, "VALID") * 4.0


@tf.custom_gradient
def _upsample(x):
    """Nearest-neighbour x2 (chainer unpooling_2d).

    Its gradient (each 2x2 block's sum) is a pooling; autodiff through the same up-sampling
    written with tf.repeat gave Tile and reduce_sum passes that cost about 5% of a
    fashion_mnist step on CPU.
    """
    height, width = spatial_size(x)
    size = [2 * height, 2 * width]
    up = tf.raw_ops.ResizeNearestNeighbor(images=x, size=size, align_corners=False,
                                          half_pixel_centers=False)
    return up, _sum_2x2_blocks


def _downsample(x):
    """2x2 mean pooling."""
    return tf.nn.avg_pool2d(x, 2, 2, "VALID")


def _container_kwargs(precision: precisions.Precision) -> dict:
    """A block or model in reduced precision passes its inputs on as they are (Keras would
    cast every float input to its float32 policy on entry)."""
    return {"autocast": False} if precision.reduced else {}


class GBlock(keras.layers.Layer):
    """Up-sampling ResBlock with (conditional) batch norm."""

    def __init__(self, channels: int, num_classes: int, cross_replica: bool,
                 bn_momentum: float, name: str | None = None, precision=None):
        self.precision = p = precisions.get(precision)
        super().__init__(name=name, **_container_kwargs(p))
        bn = dict(num_classes=num_classes, cross_replica=cross_replica, momentum=bn_momentum,
                  precision=p)
        conv = {"dtype": p.keras_policy()} if p.reduced else {}
        self.bn1 = ConditionalBatchNorm(**bn, name="cbn1")
        self.conv1 = UpsampleConv2D(channels, kernel_initializer=_conv_init(), name="conv1",
                                    precision=p)
        self.bn2 = ConditionalBatchNorm(**bn, name="cbn2")
        self.conv2 = keras.layers.Conv2D(channels, 3, padding="same",
                                         kernel_initializer=_conv_init(), name="conv2", **conv)
        self.shortcut = keras.layers.Conv2D(channels, 1, kernel_initializer="glorot_uniform",
                                            name="shortcut", **conv)

    def call(self, x, labels=None, training=False):
        act = self.precision.to_activations
        h = tf.nn.relu(self.bn1(x, labels, training=training))
        h = self.conv1(h)  # up-samples, then convolves (one transposed convolution)
        h = tf.nn.relu(self.bn2(h, labels, training=training))
        h = act(self.conv2(h))
        # a 1x1 convolution commutes with the up-sampling: convolve the 4x smaller map
        return h + _upsample(act(self.shortcut(x)))


class DBlock(keras.layers.Layer):
    """Discriminator ResBlock; `optimized=True` is SN-GAN's first block on raw pixels.

    As in SN-GAN's code the hidden width of a plain block is its INPUT width (conv1 keeps
    the channels, conv2 changes them); the optimised block's conv1 goes straight to `channels`.
    """

    def __init__(self, in_channels: int, channels: int, downsample: bool,
                 optimized: bool = False, name: str | None = None, precision=None):
        p = precisions.get(precision)
        super().__init__(name=name, **_container_kwargs(p))
        self.downsample = downsample or optimized  # the optimised block always pools
        self.optimized = optimized
        hidden = channels if optimized else in_channels
        prefix = f"{name}_" if name else ""  # unique layer names: sigma summaries use them
        self.conv1 = SNConv2D(hidden, 3, kernel_initializer=_conv_init(),
                              name=prefix + "conv1", precision=p)
        # the pooling after conv2 (residual add and pooling commute) folds into it
        self.conv2 = SNConv2D(channels, 3, kernel_initializer=_conv_init(),
                              pooled=self.downsample, name=prefix + "conv2", precision=p)
        learnable = self.downsample or in_channels != channels
        self.shortcut = (SNConv2D(channels, 1, kernel_initializer="glorot_uniform",
                                  name=prefix + "shortcut", precision=p) if learnable else None)

    @property
    def sn_layers(self):
        return [l for l in (self.conv1, self.conv2, self.shortcut) if l is not None]

    def call(self, x, training=False):
        # the optimised block reads raw pixels (float32: its conv casts them)
        h = x if self.optimized else tf.nn.relu(x)
        h = self.conv2(tf.nn.relu(self.conv1(h, training=training)), training=training)
        # conv2 pools its own output where the block down-samples; the shortcut pools first
        # (pooling commutes with a 1x1 convolution, and the pooled map is 4x smaller)
        skip = _downsample(x) if self.downsample else x
        return h + (skip if self.shortcut is None else self.shortcut(skip, training=training))


class Generator(keras.Model):
    """z [B, z_dim] (+ int labels [B]) -> images in [-1, 1], [B, R, R, C]."""

    def __init__(self, model_cfg, name: str = "generator", precision=None):
        self.precision = p = precisions.get(precision)
        super().__init__(name=name, **_container_kwargs(p))
        conv = {"dtype": p.keras_policy()} if p.reduced else {}
        arch = ARCHITECTURES[model_cfg.resolution]
        widths = [m * model_cfg.g_ch for m in arch.g_widths]
        self.num_classes = model_cfg.num_classes
        self.z_dim = model_cfg.z_dim
        self.resolution = model_cfg.resolution
        self.linear = keras.layers.Dense(_BOTTOM * _BOTTOM * widths[0],
                                         kernel_initializer="glorot_uniform", name="linear",
                                         **conv)
        self.blocks = [GBlock(w, model_cfg.num_classes, model_cfg.bn_cross_replica,
                              model_cfg.g_bn_momentum, name=f"block{i + 1}", precision=p)
                       for i, w in enumerate(widths[1:])]
        self.final_bn = ConditionalBatchNorm(0, model_cfg.bn_cross_replica,
                                             model_cfg.g_bn_momentum, name="final_bn",
                                             precision=p)
        self.to_image = keras.layers.Conv2D(model_cfg.image_channels, 3, padding="same",
                                            kernel_initializer="glorot_uniform",
                                            name="to_image", **conv)
        self._bottom_width = widths[0]

    @property
    def bn_layers(self) -> list[keras.layers.BatchNormalization]:
        """Every Keras BN inside G (for resetting/accumulating standing statistics)."""
        return [b.bn for blk in self.blocks for b in (blk.bn1, blk.bn2)] + [self.final_bn.bn]

    def call(self, z, labels=None, training=False):
        labels = labels if self.num_classes else None
        p = self.precision
        h = tf.reshape(p.to_activations(self.linear(z)),
                       (-1, _BOTTOM, _BOTTOM, self._bottom_width))
        for block in self.blocks:
            h = block(h, labels, training=training)
        h = tf.nn.relu(self.final_bn(h, training=training))
        return tf.tanh(p.to_float32(self.to_image(h)))  # images are float32


class Discriminator(keras.Model):
    """images [B, R, R, C] (+ int labels [B]) -> logits [B] (projection discriminator)."""

    def __init__(self, model_cfg, name: str = "discriminator", precision=None):
        self.precision = p = precisions.get(precision)
        super().__init__(name=name, **_container_kwargs(p))
        arch = ARCHITECTURES[model_cfg.resolution]
        self.num_classes = model_cfg.num_classes
        self.resolution = model_cfg.resolution
        self.blocks = []
        in_ch = model_cfg.image_channels
        for i, (m, down) in enumerate(arch.d_blocks):
            ch = m * model_cfg.d_ch
            self.blocks.append(DBlock(in_ch, ch, down, optimized=(i == 0), name=f"block{i + 1}",
                                      precision=p))
            in_ch = ch
        self.linear = SNDense(1, use_bias=arch.d_head_bias, name="linear", precision=p)
        self.embed = (SNEmbedding(model_cfg.num_classes, in_ch, name="embed", precision=p)
                      if model_cfg.num_classes else None)

    @property
    def sn_layers(self) -> list:
        """Every spectrally normalised layer (for sigma summaries)."""
        layers = [l for block in self.blocks for l in block.sn_layers] + [self.linear]
        return layers + ([self.embed] if self.embed is not None else [])

    def call(self, images, labels=None, training=False):
        h = images
        for block in self.blocks:
            h = block(h, training=training)
        f32 = self.precision.to_float32  # the head sums in float32; the logits are float32
        h = tf.reduce_sum(tf.nn.relu(f32(h)), axis=(1, 2))  # global SUM pooling, as SN-GAN
        logits = f32(tf.squeeze(self.linear(h, training=training), axis=-1))
        if self.embed is not None:
            if labels is None:
                raise ValueError("a class-conditional discriminator needs labels")
            logits += tf.reduce_sum(f32(self.embed(labels, training=training)) * h, axis=-1)
        return logits


def _dummy_labels(model_cfg, batch):
    return tf.zeros([batch], tf.int32) if model_cfg.num_classes else None


def build_generator(model_cfg, precision=None) -> Generator:
    """A Generator with its variables created (call inside the replicator's scope)."""
    g = Generator(model_cfg, precision=precision)
    g(tf.zeros([1, model_cfg.z_dim]), _dummy_labels(model_cfg, 1), training=False)
    return g


def build_discriminator(model_cfg, precision=None) -> Discriminator:
    """A Discriminator with its variables created (call inside the replicator's scope)."""
    d = Discriminator(model_cfg, precision=precision)
    r = model_cfg.resolution
    d(tf.zeros([1, r, r, model_cfg.image_channels]), _dummy_labels(model_cfg, 1),
      training=False)
    return d


def count_params(model: keras.Model, trainable_only: bool = True) -> int:
    """Number of (trainable) scalars; SN's u/sigma and BN moving statistics are not."""
    weights = model.trainable_weights if trainable_only else model.weights
    return int(sum(np.prod(w.shape) for w in weights))
