"""SN-GAN's building blocks: spectrally normalised dense/conv/embedding, conditional BN.

Spectral normalisation follows SN-GAN (Miyato et al. 2018, `max_singular_value` in
pfnet-research/sngan_projection), not `keras.layers.SpectralNormalization`, which overwrites
the kernel with W/sigma (the raw W is lost and no gradient flows through sigma):

* the raw weight W stays the trainable variable; the layer uses W / sigma(W);
* sigma(W) = v^T W u from ONE power iteration per training call, started from a persistent
  non-trainable u; u and v are constants for the gradient (stop_gradient), so the gradient
  flows through W both directly and through sigma (d sigma / dW = v u^T);
* u (and the logged `sigma`) are written only when `training=True`; an inference call does
  the same power iteration from the stored u but keeps nothing, so evaluation has no side
  effects;
* u and sigma are created with aggregation MEAN: under tf.distribute an assign in replica
  context is then legal (compare_gan issue #38) and writes the all-reduced mean to every
  replica, so all replicas hold the same u. Every replica computes the same update anyway
  (it depends only on the mirrored W and u, never on the replica's data); the all-reduce
  guards against drift. MEAN rather than ONLY_FIRST_REPLICA because TF implements the
  latter with `merge_call`, which MirroredStrategy does not allow inside an XLA-compiled
  step on GPUs, while MEAN has a collective all-reduce path there. (A Keras variable with
  the default aggregation "none" is assigned per replica without any error, and silently
  drifts.)
"""
from __future__ import annotations

import keras
import tensorflow as tf

import replication
from sngan import precision as precisions

_EPS = 1e-12  # SN-GAN's _l2normalize epsilon


def _l2_normalize(x: tf.Tensor) -> tf.Tensor:
    """x / (||x|| + eps), exactly as SN-GAN writes it (not tf.math.l2_normalize's max())."""
    return x / (tf.norm(x) + _EPS)


@tf.custom_gradient
def _dense_gather(table: tf.Tensor, ids: tf.Tensor):
    """tf.gather(table, ids) whose gradient w.r.t. `table` is a dense tensor.

    A plain gather gives IndexedSlices, which gradient accumulation, EMA bookkeeping and
    some cross-replica reductions handle badly; the tables here are small.
    """
    ids = tf.cast(ids, tf.int32)
    rows = tf.shape(table)[0]

    def grad(dy):
        return tf.math.unsorted_segment_sum(dy, ids, rows), None

    return tf.gather(table, ids), grad


@tf.custom_gradient
def reduced_bias_add(y, bias):
    """y + bias for reduced-precision y and a float32 bias, its gradient summed accurately.

    BiasAddGrad in bfloat16 accumulates in bfloat16 (tested: a 15% error summing 16k values),
    while reduce_sum accumulates in float32 and rounds once (0.2%).
    """
    def grad(dy):
        axes = list(range(len(dy.shape) - 1))
        return dy, tf.cast(tf.reduce_sum(dy, axes), bias.dtype)
    return tf.nn.bias_add(y, tf.cast(bias, y.dtype)), grad


class _SpectralNormLayer(keras.layers.Layer):
    """Holds `kernel`, `u` and `sigma` and produces W / sigma(W) for a subclass's op.

    `precision` (sngan.precision): the power iteration and W / sigma always run in float32;
    a reduced precision casts the op's inputs and the normalised kernel, and the op's output
    to the activations' dtype. The layer keeps Keras's float32 policy (its variables must not
    be autocast) and, in reduced precision, autocast=False so Keras does not cast its inputs.
    """

    def __init__(self, precision=None, **kwargs):
        self.precision = precisions.get(precision)
        if self.precision.reduced:
            kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)

    def _finish(self, y, bias):
        """The op's output in the activations' dtype, plus the bias (cast to match)."""
        y = self.precision.to_activations(y)
        return y if bias is None else reduced_bias_add(y, tf.convert_to_tensor(bias))

    def _add_spectral_norm_weights(self, kernel_shape, kernel_initializer) -> None:
        self.kernel = self.add_weight(shape=kernel_shape, initializer=kernel_initializer,
                                      name="kernel")
        out = kernel_shape[-1]
        self.u = self.add_weight(shape=(1, out), initializer=keras.initializers.RandomNormal(),
                                 trainable=False, aggregation="mean", name="u")
        self.sigma = self.add_weight(shape=(), initializer="ones", trainable=False,
                                     aggregation="mean", name="sigma")

    def spectral_norm(self, training: bool = False) -> tf.Tensor:
        """sigma(W) after one power iteration; stores the new u and sigma if training."""
        w = tf.reshape(tf.convert_to_tensor(self.kernel), (-1, self.kernel.shape[-1]))
        u = tf.convert_to_tensor(self.u)
        v = tf.stop_gradient(_l2_normalize(tf.matmul(u, w, transpose_b=True)))  # [1, in]
        u = tf.stop_gradient(_l2_normalize(tf.matmul(v, w)))  # [1, out]
        sigma = tf.reduce_sum(tf.matmul(v, w) * u)
        if training:
            self.u.assign(u)
            self.sigma.assign(tf.stop_gradient(sigma))
        return sigma

    def normalized_kernel(self, training: bool = False) -> tf.Tensor:
        return tf.convert_to_tensor(self.kernel) / self.spectral_norm(training)


class SNDense(_SpectralNormLayer):
    """Dense layer with a spectrally normalised kernel [in, units]."""

    def __init__(self, units: int, use_bias: bool = True,
                 kernel_initializer="glorot_uniform", name: str | None = None,
                 precision=None, **kwargs):
        super().__init__(precision=precision, name=name, **kwargs)
        self.units = units
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        self._add_spectral_norm_weights((input_shape[-1], self.units), self.kernel_initializer)
        self.bias = (self.add_weight(shape=(self.units,), initializer="zeros", name="bias")
                     if self.use_bias else None)

    def call(self, inputs, training=False):
        p = self.precision
        if not p.reduced:
            y = tf.matmul(inputs, self.normalized_kernel(bool(training)))
            return y + self.bias if self.use_bias else y
        y = tf.matmul(p.to_compute(inputs), p.to_compute(self.normalized_kernel(bool(training))))
        return self._finish(y, self.bias)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)


class SNConv2D(_SpectralNormLayer):
    """2-D convolution (NHWC) whose kernel [kh, kw, in, out] is normalised as [-1, out].

    `pooled=True` (3x3 'same' only) returns the convolution's output 2x2 mean-pooled, as D's
    down-sampling blocks use it, computed by `conv_then_pool` in a quarter of the positions.
    The variables, and so the spectral norm, are the 3x3 layer's.
    """

    def __init__(self, filters: int, kernel_size=3, strides=1, padding: str = "same",
                 use_bias: bool = True, kernel_initializer="glorot_uniform",
                 pooled: bool = False, name: str | None = None, precision=None, **kwargs):
        super().__init__(precision=precision, name=name, **kwargs)
        self.filters = filters
        self.kernel_size = ((kernel_size, kernel_size) if isinstance(kernel_size, int)
                            else tuple(kernel_size))
        self.strides = strides
        self.padding = padding.upper()
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        unit_stride = strides in (1, (1, 1), [1, 1])
        if pooled and (self.kernel_size != (3, 3) or not unit_stride or self.padding != "SAME"):
            raise ValueError("SNConv2D(pooled=True) needs a 3x3 kernel, stride 1 and 'same' "
                             f"padding, not {self.kernel_size}, {strides}, {padding!r}")
        self.pooled = pooled

    def build(self, input_shape):
        shape = self.kernel_size + (input_shape[-1], self.filters)
        self._add_spectral_norm_weights(shape, self.kernel_initializer)
        self.bias = (self.add_weight(shape=(self.filters,), initializer="zeros", name="bias")
                     if self.use_bias else None)

    def call(self, inputs, training=False):
        kernel = self.normalized_kernel(bool(training))
        p = self.precision
        if self.pooled:
            y = conv_then_pool(inputs, kernel, p)
        else:
            y = tf.nn.conv2d(p.to_compute(inputs), p.to_compute(kernel), self.strides,
                             self.padding)
        if not p.reduced:
            return tf.nn.bias_add(y, self.bias) if self.use_bias else y
        return self._finish(y, self.bias)


class SNEmbedding(_SpectralNormLayer):
    """Embedding table [input_dim, output_dim] normalised by its largest singular value."""

    def __init__(self, input_dim: int, output_dim: int,
                 embeddings_initializer="glorot_uniform", name: str | None = None,
                 precision=None, **kwargs):
        super().__init__(precision=precision, name=name, **kwargs)
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)

    def build(self, input_shape=None):
        self._add_spectral_norm_weights((self.input_dim, self.output_dim),
                                        self.embeddings_initializer)

    def call(self, ids, training=False):
        p = self.precision
        table = p.to_compute(self.normalized_kernel(bool(training)))
        return p.to_activations(_dense_gather(table, ids)) if p.reduced else _dense_gather(
            table, ids)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)


class ConditionalBatchNorm(keras.layers.Layer):
    """Batch norm without its own centre/scale, then a per-class gain (init 1) and bias (0).

    `cross_replica=True` normalises with statistics of the GLOBAL batch (one all-reduce of
    sum, sum of squares and count, as Keras's synchronised BN); False uses each replica's own
    batch (the per-device BN of the original SN-GAN code, kept as an ablation). With
    `num_classes == 0` the gain and bias are plain learned vectors.
    Training uses `replication.cross_replica_batch_norm` (the normalisation and the gain/bias
    in one pass, with a closed-form gradient: the step's largest cost after its convolutions
    otherwise). The inner Keras BN `self.bn` holds the moving statistics, updated as Keras
    updates them, so a sampler can reset and re-accumulate them ("standing statistics") and
    checkpoints keep their names.
    """

    def __init__(self, num_classes: int, cross_replica: bool = True, momentum: float = 0.99,
                 epsilon: float = 1e-5, name: str | None = None, precision=None, **kwargs):
        super().__init__(name=name, **kwargs)
        # float32 policy: Keras casts reduced-precision inputs to float32 on the way in, so the
        # statistics and the normalisation are float32; the output takes the activations' dtype
        self.precision = precisions.get(precision)
        self.num_classes = num_classes
        self.cross_replica = cross_replica
        self.bn = keras.layers.BatchNormalization(
            momentum=momentum, epsilon=epsilon, center=False, scale=False,
            synchronized=cross_replica, name="bn")

    def build(self, input_shape):
        channels = input_shape[-1]
        shape = (self.num_classes, channels) if self.num_classes else (channels,)
        self.gain = self.add_weight(shape=shape, initializer="ones", name="gain")
        self.bias = self.add_weight(shape=shape, initializer="zeros", name="bias")
        self.bn.build(input_shape)

    def call(self, inputs, labels=None, training=False):
        out = self._normalise(inputs, labels, training)
        return self.precision.to_activations(out) if self.precision.reduced else out

    def _normalise(self, inputs, labels, training):
        gain, bias = tf.convert_to_tensor(self.gain), tf.convert_to_tensor(self.bias)
        if self.num_classes:
            if labels is None:
                raise ValueError(f"{self.name}: a class-conditional BN needs labels")
            gain, bias = _dense_gather(gain, labels), _dense_gather(bias, labels)
        else:
            gain, bias = gain[tf.newaxis], bias[tf.newaxis]
        bn = self.bn
        if training and bn.trainable:  # as Keras: a frozen BN normalises with moving stats
            out, mean, variance = replication.cross_replica_batch_norm(
                inputs, gain, bias, bn.epsilon, cross_replica=self.cross_replica)
            bn.moving_mean.assign(bn.moving_mean * bn.momentum + mean * (1.0 - bn.momentum))
            bn.moving_variance.assign(
                bn.moving_variance * bn.momentum + variance * (1.0 - bn.momentum))
            return out
        scale = gain * tf.math.rsqrt(tf.convert_to_tensor(bn.moving_variance) + bn.epsilon)
        shift = bias - tf.convert_to_tensor(bn.moving_mean) * scale
        broadcast = [-1] + [1] * (len(inputs.shape) - 2) + [inputs.shape[-1]]
        return inputs * tf.reshape(scale, broadcast) + tf.reshape(shift, broadcast)

    def compute_output_shape(self, input_shape):
        return input_shape


def spatial_size(x: tf.Tensor):
    """[height, width] of an NHWC tensor: Python ints where static, else tensors."""
    return [x.shape[i] if x.shape[i] is not None else tf.shape(x)[i] for i in (1, 2)]


def box_filtered(kernel: tf.Tensor) -> tf.Tensor:
    """A 3x3 kernel [3, 3, in, out] convolved with a 2x2 box of ones: [4, 4, in, out].

    Tap (r, c) of the result sums the 3x3 taps (r - a, c - b) over a, b in {0, 1}: what a 3x3
    kernel applies, per input pixel, across one 2x2 block of a nearest-neighbour up-sampling
    or of a 2x2 pooling.
    """
    def shifted(a, b):
        return tf.pad(kernel, [[a, 1 - a], [b, 1 - b], [0, 0], [0, 0]])
    return shifted(0, 0) + shifted(1, 0) + shifted(0, 1) + shifted(1, 1)


def conv_then_pool(x: tf.Tensor, kernel: tf.Tensor, precision=None) -> tf.Tensor:
    """avg_pool_2x2(conv2d(x, kernel 3x3, 'same')) as ONE stride-2 4x4 convolution.

    Each pooled output averages four 3x3 windows that together cover a 4x4 one, so the
    kernel folds into `box_filtered(kernel) / 4` applied at stride 2 ('same' pads one pixel
    on each side of an even map): 16 multiply-adds per output where conv-then-pool spends
    4 x 9 = 36, and no pooling pass. An odd height or width is refused: there the pooling
    would drop the last row, but the strided conv would pad it into one more output.
    A reduced `precision` folds the kernel in float32 and rounds the folded kernel once.
    """
    p = precisions.get(precision)
    checks = []
    for size in spatial_size(x):
        if isinstance(size, int) and size % 2:
            raise ValueError(f"conv_then_pool needs an even height and width, got {x.shape}")
        if isinstance(size, tf.Tensor):
            checks.append(tf.debugging.assert_equal(
                size % 2, 0, message="conv_then_pool needs an even height and width"))
    with tf.control_dependencies(checks):
        return tf.nn.conv2d(p.to_compute(x), p.to_compute(box_filtered(kernel) / 4.0), 2,
                            "SAME")


def upsample_then_conv(x: tf.Tensor, kernel: tf.Tensor, precision=None) -> tf.Tensor:
    """conv2d(nearest_upsample_x2(x), kernel 3x3, 'same') as ONE stride-2 transposed conv.

    On an up-sampled map a 3x3 window covers only 2x2 distinct input pixels, so each output
    is 4 multiply-adds per channel pair instead of 9 (the four output parities use four
    different 2x2 sums of taps). The transposed convolution with the box-filtered kernel,
    flipped (it correlates with the kernel's mirror image), computes exactly that, without
    materialising the up-sampled map. A reduced `precision` folds the kernel in float32.
    """
    p = precisions.get(precision)
    height, width = spatial_size(x)
    batch = x.shape[0] if x.shape[0] is not None else tf.shape(x)[0]
    output_shape = [batch, 2 * height, 2 * width, kernel.shape[-1]]
    if any(isinstance(d, tf.Tensor) for d in output_shape):
        output_shape = tf.stack(output_shape)
    flipped = tf.reverse(box_filtered(kernel), [0, 1])
    # conv2d_transpose takes [h, w, out, in]: the layout of the convolution it transposes
    return tf.nn.conv2d_transpose(p.to_compute(x),
                                  p.to_compute(tf.transpose(flipped, [0, 1, 3, 2])),
                                  output_shape, 2, "SAME")


class UpsampleConv2D(keras.layers.Conv2D):
    """Nearest-neighbour x2 up-sampling, then a 3x3 'same' convolution (G's blocks' conv1).

    Computed by `upsample_then_conv`: 2.25x fewer multiply-adds than convolving the
    up-sampled map, with the same result up to rounding. The variables are Keras's `Conv2D`'s
    own (kernel [3, 3, in, filters], bias), so checkpoints do not record how it is computed.
    """

    def __init__(self, filters: int, kernel_initializer="glorot_uniform",
                 name: str | None = None, precision=None, **kwargs):
        super().__init__(filters, 3, padding="same", kernel_initializer=kernel_initializer,
                         name=name, **kwargs)
        # float32 policy, cast by hand: the kernel is box-filtered in float32, then rounded
        self.precision = precisions.get(precision)

    def get_config(self):
        config = super().get_config()
        for key in ("kernel_size", "strides", "padding"):  # fixed by the class
            config.pop(key)
        return config

    def convolution_op(self, inputs, kernel):
        y = upsample_then_conv(inputs, tf.convert_to_tensor(kernel), self.precision)
        return self.precision.to_activations(y) if self.precision.reduced else y

    def compute_output_shape(self, input_shape):
        batch, height, width = input_shape[:3]
        return (batch, None if height is None else 2 * height,
                None if width is None else 2 * width, self.filters)
