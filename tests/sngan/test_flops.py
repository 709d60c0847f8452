"""sngan.flops against two independent counts: a hand count of the fashion_mnist model (as
written and as executed), and TensorFlow's own flops registry (what tf.compat.v1.profiler
reports) applied to the traced models and to the trainer's compiled D and G update graphs,
which run the executed count."""
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import ops as tf_ops
from tiny_configs import tiny_train

import replication
from experiments.configs import preset
from sngan import flops, models
from sngan.config import ModelConfig
from sngan.training import GANTrainer

# Ops whose FLOPs sngan.flops counts (everything else is element-wise).
COUNTED_OPS = ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MatMul")

CONFIGS = {
    "cond32": ModelConfig(resolution=32, image_channels=1, num_classes=10, z_dim=8,
                          g_ch=4, d_ch=4),
    "uncond64_rgb": ModelConfig(resolution=64, image_channels=3, num_classes=0, z_dim=8,
                                g_ch=2, d_ch=2),
    "cond128": ModelConfig(resolution=128, image_channels=3, num_classes=5, z_dim=8,
                           g_ch=2, d_ch=2),
}


def _live_ops(graph, outputs):
    """Ops a function really runs: ancestors of its outputs and of its stateful ops (TF prunes
    the rest, e.g. the weight gradients of D that the G update computes but never uses)."""
    seen, stack = set(), [t.op for t in outputs] + [
        op for op in graph.get_operations() if op._is_stateful]
    while stack:
        op = stack.pop()
        if op.name not in seen:
            seen.add(op.name)
            stack += [t.op for t in op.inputs] + list(op.control_inputs)
    return seen


def registry_flops(concrete_fn) -> int:
    """TF's registered 'flops' statistic summed over the live conv/matmul ops of a graph."""
    graph = concrete_fn.graph
    live = _live_ops(graph, concrete_fn.outputs)
    total = 0
    for op in graph.get_operations():
        if op.type in COUNTED_OPS and op.name in live:
            total += int(tf_ops.get_stats_for_node_def(graph, op.node_def, "flops").value)
    return total


def test_hand_count_of_the_fashion_mnist_model():
    m = preset("fashion_mnist").model  # z 64, G and D width 32, 1 channel, 32x32
    w = 32
    def block(r):
        return 2 * r * r * (9 * w * w + 9 * w * w + w * w)  # conv1, conv2, shortcut
    g = 2 * 64 * 16 * w + block(8) + block(16) + block(32) + 2 * 32 * 32 * 9 * w * 1
    assert flops.generator_forward_flops(m) == g == 52_953_088
    d = (2 * 32 * 32 * 9 * 1 * w + 2 * 32 * 32 * 9 * w * w + 2 * 16 * 16 * 1 * w  # optimised
         + 2 * 16 * 16 * (9 * w * w * 2 + w * w)  # block 2 (down, learnable shortcut)
         + 2 * 2 * 8 * 8 * 9 * w * w * 2  # blocks 3 and 4 (plain, identity shortcut)
         + 2 * w)  # linear head
    assert flops.discriminator_forward_flops(m) == d == 34_160_704
    # batch 64, n_dis 2: the simple "backward = 2x forward" rule gives 47.6 GFLOP; the exact
    # count drops the input gradients nobody needs (D's image-reading layers in D updates).
    simple = 2 * (64 * g + 3 * 128 * d) + (3 * 64 * g + 2 * 64 * d)
    exact = flops.train_step_flops(m, 64, 2)
    assert exact < simple and exact / simple > 0.99
    assert flops.sampling_flops(m, 5000) == 5000 * g


def test_hand_count_of_the_fashion_mnist_model_as_executed():
    """G's conv1 as a stride-2 transposed 4x4 conv from the half-size map and the shortcut
    before the up-sampling; D's pooled conv2 as a stride-2 4x4 conv, the shortcut after the
    pool."""
    m = preset("fashion_mnist").model
    w = 32
    def block(r):
        h = r // 2
        return 2 * (h * h * 16 * w * w + r * r * 9 * w * w + h * h * w * w)
    g = 2 * 64 * 16 * w + block(8) + block(16) + block(32) + 2 * 32 * 32 * 9 * w * 1
    assert flops.generator_forward_flops(m, executed=True) == g
    d = (2 * 32 * 32 * 9 * 1 * w + 2 * 16 * 16 * 16 * w * w + 2 * 16 * 16 * 1 * w
         + 2 * 16 * 16 * 9 * w * w + 2 * 8 * 8 * (16 * w * w + w * w)
         + 2 * 2 * 8 * 8 * 9 * w * w * 2
         + 2 * w)
    assert flops.discriminator_forward_flops(m, executed=True) == d
    written = flops.train_step_flops(m, 64, 2)
    executed = flops.train_step_flops(m, 64, 2, executed=True)
    assert round(executed / written, 2) == 0.64  # 30.2 of 47.4 GFLOP
    assert flops.sampling_flops(m, 10, executed=True) == 10 * g


def test_hand_count_of_a_64x64_model_as_written_and_as_executed():
    """The 64x64 layout (5 up blocks, 5 down blocks that all pool, widths doubling), counted
    layer by layer here, since TensorFlow's registry only sees the executed form."""
    cfg = CONFIGS["uncond64_rgb"]  # z 8, G and D width 2, RGB
    c = 2

    def conv(size, k, c_in, c_out):
        return 2 * size * size * k * k * c_in * c_out

    g_widths = [16 * c, 8 * c, 4 * c, 2 * c, c]
    g_written = g_run = 2 * 8 * 16 * 16 * c + conv(64, 3, c, 3)  # linear, to_image
    for size, (c_in, c_out) in zip((8, 16, 32, 64), zip(g_widths, g_widths[1:])):
        g_written += conv(size, 3, c_in, c_out) + conv(size, 3, c_out, c_out) \
            + conv(size, 1, c_in, c_out)
        # transposed 4x4 conv: 16 multiply-adds per pixel of the small map, 4 per output
        g_run += conv(size // 2, 4, c_in, c_out) + conv(size, 3, c_out, c_out) \
            + conv(size // 2, 1, c_in, c_out)
    # optimised block at 64 (shortcut pools first), then down blocks at 32, 16, 8, 4
    d_written = conv(64, 3, 3, c) + conv(64, 3, c, c) + conv(32, 1, 3, c) + 2 * 16 * c
    d_run = conv(64, 3, 3, c) + conv(32, 4, c, c) + conv(32, 1, 3, c) + 2 * 16 * c
    for size, (c_in, c_out) in zip((32, 16, 8, 4), [(c, 2 * c), (2 * c, 4 * c),
                                                    (4 * c, 8 * c), (8 * c, 16 * c)]):
        d_written += conv(size, 3, c_in, c_in) + conv(size, 3, c_in, c_out) \
            + conv(size, 1, c_in, c_out)
        d_run += conv(size, 3, c_in, c_in) + conv(size // 2, 4, c_in, c_out) \
            + conv(size // 2, 1, c_in, c_out)
    assert flops.generator_forward_flops(cfg) == g_written
    assert flops.discriminator_forward_flops(cfg) == d_written
    assert flops.generator_forward_flops(cfg, executed=True) == g_run
    assert flops.discriminator_forward_flops(cfg, executed=True) == d_run


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_forward_flops_match_tensorflow_registry(name):
    cfg = CONFIGS[name]
    g, d = models.build_generator(cfg), models.build_discriminator(cfg)
    def labels(b):
        return tf.TensorSpec([b], tf.int32) if cfg.num_classes else None
    per_batch = {}
    for b in (2, 5):
        gen = tf.function(lambda z, y: g(z, y, training=True)).get_concrete_function(
            tf.TensorSpec([b, cfg.z_dim]), labels(b))
        r = cfg.resolution
        dis = tf.function(lambda x, y: d(x, y, training=True)).get_concrete_function(
            tf.TensorSpec([b, r, r, cfg.image_channels]), labels(b))
        per_batch[b] = registry_flops(gen), registry_flops(dis)
    # Per image: the difference of two batch sizes cancels the spectral norm's per-call matmuls.
    g_fwd = flops.generator_forward_flops(cfg, executed=True)
    d_fwd = flops.discriminator_forward_flops(cfg, executed=True)
    assert (per_batch[5][0] - per_batch[2][0]) // 3 == g_fwd
    assert (per_batch[5][1] - per_batch[2][1]) // 3 == d_fwd
    # ... which are all that is left over: 3 matmuls of 2|W| per SN weight (G has none).
    assert per_batch[2][0] == 2 * g_fwd
    assert per_batch[2][1] == 2 * d_fwd + 6 * flops.discriminator_sn_weights(cfg)
    # the graphs run the folded convolutions, not the layout as written (the exact executed
    # count is checked by hand in test_hand_count_of_the_fashion_mnist_model_as_executed)
    assert g_fwd < flops.generator_forward_flops(cfg)
    assert d_fwd < flops.discriminator_forward_flops(cfg)
    assert flops.discriminator_sn_weights(cfg) == sum(
        int(np.prod(l.kernel.shape)) for l in d.sn_layers)


def _synthetic(model_cfg, b):
    r, ch = model_cfg.resolution, model_cfg.image_channels

    def input_fn_for(skip):
        def input_fn(ctx=None):
            x = np.zeros((4 * b, r, r, ch), np.float32)
            y = np.zeros(4 * b, np.int32)
            return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
                b, drop_remainder=True)
        return input_fn
    return input_fn_for


def _trainer_update_flops(tmp_path, model_cfg, batch, g_batch_multiplier=1):
    train_cfg = tiny_train(global_batch_size=batch, n_dis=1, steps=10,
                         g_batch_multiplier=g_batch_multiplier)
    trainer = GANTrainer(model_cfg, train_cfg, replication.make_replicator("default"),
                         _synthetic(model_cfg, batch),
                         str(tmp_path / f"b{batch}x{g_batch_multiplier}"))
    key = tf.constant(0, tf.int64)
    d_fn = trainer._d_update.get_concrete_function((next(trainer.iterator),), key)
    g_fn = trainer._g_update.get_concrete_function(key)
    return registry_flops(d_fn), registry_flops(g_fn)


@pytest.mark.parametrize("name,batch", [  # each traces two trainers; 64x64 is the slower
    ("cond32", 4), pytest.param("uncond64_rgb", 6, marks=pytest.mark.long)])
def test_train_step_flops_match_the_trainers_graphs(tmp_path, name, batch):
    model_cfg = CONFIGS[name]
    predicted = flops.train_step_breakdown(model_cfg, batch, n_dis=1, executed=True)
    assert _trainer_update_flops(tmp_path, model_cfg, batch) == (predicted["d_update"],
                                                                 predicted["g_update"])
    # n_dis D updates and one G update per step.
    # sngan_projection's larger G batch: the G update's graph grows by the multiplier
    doubled = flops.train_step_breakdown(model_cfg, batch, n_dis=1, g_batch_multiplier=2,
                                         executed=True)
    assert _trainer_update_flops(tmp_path, model_cfg, batch, 2)[1] == doubled["g_update"]
    for n_dis in (1, 2, 5):
        br = flops.train_step_breakdown(model_cfg, 8, n_dis)
        assert flops.train_step_flops(model_cfg, 8, n_dis) == br["total"] == \
            n_dis * br["d_update"] + br["g_update"]
        assert br["total"] == sum(br[k] for k in ("g_forward", "g_backward", "d_forward",
                                                  "d_backward", "spectral_norm"))


def test_evaluation_generation_counts_whole_batches():
    m = CONFIGS["cond32"]
    g = flops.generator_forward_flops(m)
    assert flops.evaluation_generation_flops(m, 5000, 512) == 10 * 512 * g
    assert flops.evaluation_generation_flops(m, 5000, 500, "standing", 10) == 20 * 500 * g
