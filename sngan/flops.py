"""Floating-point operations of SN-GAN's training step and of sampling, from layer shapes.

What is counted: the multiply-adds of every convolution and dense layer, as 2 FLOPs each
(conv: 2 * H_out * W_out * K * K * C_in * C_out per image; dense: 2 * in * out), which is
also what TensorFlow's own flops registry (`tf.compat.v1.profiler`) counts for Conv2D,
MatMul and their gradient ops. The count is exact for those ops; it leaves out the element-wise
work (batch norm, ReLU, pooling, up-sampling, the projection's inner product, Adam), which
is O(activations) rather than O(activations x channels). The spectral norm's power
iteration is counted separately (`spectral_norm` in `train_step_breakdown`): its three
[1, n] x [n, out] matmuls cost 6 |W| per SN weight per D call whatever the batch, plus 2 |W|
for the gradient through sigma(W) in a D update (0.3 MFLOP per step for fashion_mnist,
1e-5 of the step).

The backward pass of a layer is its weight gradient (1x forward) plus its input gradient
(1x forward), the latter only where TensorFlow needs it, exactly as the trainer
(`sngan.training.GANTrainer`) runs one generator step:

* each of the n_dis D updates: G forward on B latents (outside the tape), then D forward and
  backward (weights; inputs except for the layers that read the images, which need no
  gradient) on the 2B real + fake images;
* the G update: G forward and backward (weights; inputs except the first linear layer, which
  reads the latents) on B latents (g_batch_multiplier x B if set), and D forward plus
  backward to its inputs only (D's weight gradients are not requested; TensorFlow prunes
  them from the compiled step).

Two counts of every layer: `forward`, the architecture as written (G up-samples then
convolves, D convolves then pools: the model FLOPs that papers and the efficiency targets
use), and `executed`, what `sngan.models` runs for the same function (the up-sampling and
the pooling folded into stride-2 4x4 convolutions, 16 multiply-adds per 2x2 block of the
larger map instead of 36; the 1x1 shortcuts on the smaller map). Every function takes
`executed=False` / `True`.

tests/sngan/test_flops.py checks the executed count against TensorFlow's flops registry
applied to the trainer's own compiled step graphs, and the model count by hand.

Per-layer lists are built analytically from `sngan.models.ARCHITECTURES` and the model
config, mirroring `models.Generator` / `models.Discriminator` layer by layer.
"""
from __future__ import annotations

import dataclasses

from sngan.models import _BOTTOM, ARCHITECTURES


@dataclasses.dataclass(frozen=True)
class LayerCost:
    """One conv or dense layer: its forward FLOPs per image and where its input comes from."""
    name: str
    forward: int  # FLOPs per image, the layer as the architecture writes it
    reads_model_input: bool  # the layer reads the latents (G) or the images (D) directly
    executed: int | None = None  # FLOPs per image as sngan.models computes it, if fewer

    def flops(self, executed: bool) -> int:
        return self.executed if executed and self.executed is not None else self.forward


def _conv(name: str, size: int, k: int, c_in: int, c_out: int, reads_input=False,
          executed_at: int | None = None, executed_k: int | None = None):
    """`executed_at` / `executed_k`: the map size and kernel of the convolution that runs."""
    executed = (None if executed_at is None
                else 2 * executed_at ** 2 * (executed_k or k) ** 2 * c_in * c_out)
    return LayerCost(name, 2 * size * size * k * k * c_in * c_out, reads_input, executed)


def _dense(name: str, d_in: int, d_out: int, reads_input=False):
    return LayerCost(name, 2 * d_in * d_out, reads_input)


def generator_layers(model_cfg) -> list[LayerCost]:
    """G's conv/dense layers in call order (models.Generator)."""
    arch = ARCHITECTURES[model_cfg.resolution]
    widths = [m * model_cfg.g_ch for m in arch.g_widths]
    layers = [_dense("linear", model_cfg.z_dim, _BOTTOM * _BOTTOM * widths[0], True)]
    size = _BOTTOM
    for i, (c_in, c_out) in enumerate(zip(widths, widths[1:]), 1):
        size *= 2  # every G block up-samples before its convolutions
        # conv1 runs as a transposed 4x4 conv from the input map; the shortcut before the
        # up-sampling
        layers += [_conv(f"block{i}/conv1", size, 3, c_in, c_out, executed_at=size // 2,
                         executed_k=4),
                   _conv(f"block{i}/conv2", size, 3, c_out, c_out),
                   _conv(f"block{i}/shortcut", size, 1, c_in, c_out, executed_at=size // 2)]
    if size != model_cfg.resolution:
        raise AssertionError(f"G ends at {size}x{size}, not {model_cfg.resolution}")
    layers.append(_conv("to_image", size, 3, widths[-1], model_cfg.image_channels))
    return layers


def discriminator_layers(model_cfg) -> list[LayerCost]:
    """D's conv/dense layers in call order (models.Discriminator / DBlock)."""
    arch = ARCHITECTURES[model_cfg.resolution]
    size, c_in = model_cfg.resolution, model_cfg.image_channels
    layers = []
    for i, (m, down) in enumerate(arch.d_blocks, 1):
        c = m * model_cfg.d_ch
        if i == 1:  # optimised block: conv-ReLU-conv-pool, shortcut pool-conv1x1 (always pools)
            layers += [_conv(f"block{i}/conv1", size, 3, c_in, c, True),
                       _conv(f"block{i}/conv2", size, 3, c, c, executed_at=size // 2,
                             executed_k=4),
                       _conv(f"block{i}/shortcut", size // 2, 1, c_in, c, True)]
            size //= 2
        else:  # hidden width = input width; shortcut conv1x1 before the pool if learnable
            # where the block pools: conv2 as a stride-2 4x4 conv, the shortcut after the pool
            pooled = dict(executed_at=size // 2) if down else {}
            layers += [_conv(f"block{i}/conv1", size, 3, c_in, c_in),
                       _conv(f"block{i}/conv2", size, 3, c_in, c, executed_k=4, **pooled)]
            if down or c_in != c:
                layers.append(_conv(f"block{i}/shortcut", size, 1, c_in, c, **pooled))
            if down:
                size //= 2
        c_in = c
    layers.append(_dense("linear", c_in, 1))  # the projection's embedding is a gather: 0 FLOPs
    return layers


def discriminator_sn_weights(model_cfg) -> int:
    """Scalars in D's spectrally normalised weights (conv/linear kernels, class embedding)."""
    arch = ARCHITECTURES[model_cfg.resolution]
    n, c_in = 0, model_cfg.image_channels
    for i, (m, down) in enumerate(arch.d_blocks, 1):
        c = m * model_cfg.d_ch
        if i == 1:
            n += 9 * c_in * c + 9 * c * c + c_in * c
        else:
            n += 9 * c_in * c_in + 9 * c_in * c + (c_in * c if down or c_in != c else 0)
        c_in = c
    return n + c_in + model_cfg.num_classes * c_in


def _forward(layers, executed: bool) -> int:
    return sum(l.flops(executed) for l in layers)


def _input_grads(layers, executed: bool) -> int:
    """Input gradients of every layer that does not read the model's own (constant) input."""
    return sum(l.flops(executed) for l in layers if not l.reads_model_input)


def generator_forward_flops(model_cfg, executed: bool = False) -> int:
    """Forward FLOPs of G per generated image."""
    return _forward(generator_layers(model_cfg), executed)


def discriminator_forward_flops(model_cfg, executed: bool = False) -> int:
    """Forward FLOPs of D per image scored."""
    return _forward(discriminator_layers(model_cfg), executed)


def train_step_breakdown(model_cfg, global_batch: int, n_dis: int,
                         g_batch_multiplier: int = 1,
                         executed: bool = False) -> dict[str, int]:
    """FLOPs of one trainer step (n_dis D updates + 1 G update), split by pass.

    `g_batch_multiplier` (train config field of that name): the G update draws this many
    times the global batch of latents.

    Keys: d_update (one D update), g_update, and the totals over the step of g_forward,
    g_backward, d_forward, d_backward (conv/dense layers, proportional to the batch) and
    spectral_norm (D's power iterations, independent of the batch), plus `total`.
    Gradient accumulation and replica count are not modelled: each micro-batch and replica
    repeats the power iteration, which adds 1e-5-sized terms.
    """
    g, d = generator_layers(model_cfg), discriminator_layers(model_cfg)
    b = global_batch
    g_fwd, d_fwd = _forward(g, executed), _forward(d, executed)
    # D update: G forward (no tape) on B; D forward + weight grads + input grads on 2B.
    # SN: power iteration (3 matmuls) in each D call, gradient through sigma in D updates.
    sn = discriminator_sn_weights(model_cfg)
    d_upd = dict(g_forward=b * g_fwd, g_backward=0, d_forward=2 * b * d_fwd,
                 d_backward=2 * b * (d_fwd + _input_grads(d, executed)),
                 spectral_norm=8 * sn)
    # G update on m*B latents: G forward + weight and input grads; D forward + input grads.
    gb = g_batch_multiplier * b
    g_upd = dict(g_forward=gb * g_fwd, g_backward=gb * (g_fwd + _input_grads(g, executed)),
                 d_forward=gb * d_fwd, d_backward=gb * d_fwd,
                 spectral_norm=6 * sn)
    out = {k: n_dis * d_upd[k] + g_upd[k] for k in d_upd}
    out["d_update"] = sum(d_upd.values())
    out["g_update"] = sum(g_upd.values())
    out["total"] = n_dis * out["d_update"] + out["g_update"]
    return out


def train_step_flops(model_cfg, global_batch: int, n_dis: int,
                     g_batch_multiplier: int = 1, executed: bool = False) -> int:
    """FLOPs of one generator step of the trainer at this global batch (see module doc)."""
    return train_step_breakdown(model_cfg, global_batch, n_dis, g_batch_multiplier,
                                executed)["total"]


def train_config_step_flops(model_cfg, train_cfg, executed: bool = False) -> int:
    """`train_step_flops` for a model config and a train config (its batch, n_dis and
    g_batch_multiplier)."""
    return train_step_flops(model_cfg, train_cfg.global_batch_size, train_cfg.n_dis,
                            train_cfg.g_batch_multiplier, executed)


def sampling_flops(model_cfg, n: int, executed: bool = False) -> int:
    """FLOPs to generate `n` images (G forward; BN modes 'batch'/'moving').

    'standing' BN adds `standing_batches * batch_size` more G forwards; the sampler's padding
    of the last batch adds up to one batch (see `evaluation_generation_flops`).
    """
    return n * generator_forward_flops(model_cfg, executed)


def evaluation_generation_flops(model_cfg, num_fake: int, batch_size: int,
                                bn_mode: str = "batch", standing_batches: int = 0,
                                executed: bool = False) -> int:
    """G FLOPs of one evaluation as `sngan.sampling.Sampler.batches` runs it.

    The sampler generates whole batches of `batch_size` (the last one padded), plus
    `standing_batches` batches first in BN mode 'standing'.
    """
    batches = -(-num_fake // batch_size)
    if bn_mode == "standing":
        batches += standing_batches
    return sampling_flops(model_cfg, batches * batch_size, executed)
