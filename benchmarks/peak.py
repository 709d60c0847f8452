"""This machine's measured float32 peak: what every "of peak" figure is a fraction of.

    python -m benchmarks.peak [--repeats 5] [--quick] [--out DIR]

Kernels: a large matmul; a large 3x3 convolution like the cifar10 model's, forward alone and
forward + both backward passes (as in training: the "conv peak"); and a fashion_mnist-sized
one (32 channels) for comparison. Writes benchmarks/results/peak.json.
"""
from __future__ import annotations

import argparse

from benchmarks import harness

MODULE = "benchmarks.peak"
# (batch, size, c_in, c_out, k): the cifar10-sized conv, and fashion_mnist's largest (D's
# first block on real + fake images at batch 64)
LARGE_CONV, LARGE_CONV_QUICK = (64, 16, 256, 256, 3), (32, 16, 256, 256, 3)
SMALL_CONV = (128, 32, 32, 32, 3)


def _conv_fn(batch, size, c_in, c_out, k, training: bool):
    """A compiled conv (and, if training, its two backward ops) on variables; its FLOPs."""
    import tensorflow as tf

    x = tf.Variable(tf.random.normal([batch, size, size, c_in]))
    w = tf.Variable(tf.random.normal([k, k, c_in, c_out]))
    dy = tf.Variable(tf.random.normal([batch, size, size, c_out]))
    strides = [1, 1, 1, 1]

    @tf.function
    def run():
        out = tf.nn.conv2d(x, w, 1, "SAME")[0, 0, 0, 0]  # every result feeds the output
        if training:
            out += tf.raw_ops.Conv2DBackpropInput(
                input_sizes=tf.shape(x), filter=w, out_backprop=dy, strides=strides,
                padding="SAME")[0, 0, 0, 0]
            out += tf.raw_ops.Conv2DBackpropFilter(
                input=x, filter_sizes=tf.shape(w), out_backprop=dy, strides=strides,
                padding="SAME")[0, 0, 0, 0]
        return out

    forward = 2 * batch * size * size * k * k * c_in * c_out
    return (lambda: run().numpy()), forward * (3 if training else 1)


def _conv_entry(shape, training: bool, repeats: int, cores: int) -> dict:
    fn, flop = _conv_fn(*shape, training=training)
    rate = harness.rates(flop, harness.median_seconds(fn, repeats, cores=cores))
    b, s, ci, co, k = shape
    what = "fwd + bwd-input + bwd-filter" if training else "forward"
    return {"what": f"conv {k}x{k} {ci}->{co} at {s}x{s}, batch {b}, {what}",
            "gflops_wall": rate.wall, "gflops_cpu": rate.cpu}


def conv_peak(repeats: int, quick: bool, cores: int) -> dict:
    """The conv peak alone (the large conv's training rate)."""
    return _conv_entry(LARGE_CONV_QUICK if quick else LARGE_CONV, True, repeats, cores)


def measure_peaks(repeats: int, quick: bool, cores: int) -> dict[str, dict]:
    import tensorflow as tf

    n = 2048 if quick else 4096
    a = tf.Variable(tf.random.normal([n, n]))
    b = tf.Variable(tf.random.normal([n, n]))
    mm = tf.function(lambda: tf.matmul(a, b)[0, 0])
    rate = harness.rates(2 * n ** 3, harness.median_seconds(lambda: mm().numpy(), repeats,
                                                            cores=cores))
    large = LARGE_CONV_QUICK if quick else LARGE_CONV
    return {"matmul": {"what": f"matmul {n}x{n}x{n}", "gflops_wall": rate.wall,
                       "gflops_cpu": rate.cpu},
            "conv_forward": _conv_entry(large, False, repeats, cores),
            "conv_train": _conv_entry(large, True, repeats, cores),
            "conv32_train": _conv_entry(SMALL_CONV, True, repeats, cores)}


def reference_peak(given: float | None, repeats: int, quick: bool, cores: int) -> dict:
    """The conv peak the other benchmarks divide by: `given` (GFLOP/s, e.g. from a quiet run
    of this module) or measured now, in the same process."""
    if given:
        return {"gflops_wall": given, "gflops_cpu": given, "source": f"given: --peak {given}"}
    return dict(conv_peak(repeats, quick, cores), source="measured in the same run")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    p.add_argument("--quick", action="store_true", help="smaller problems (a smoke run)")
    p.add_argument("--inter-op-threads", type=int, default=None)
    p.add_argument("--intra-op-threads", type=int, default=None)
    p.add_argument("--out", help="directory for peak.json (default: benchmarks/results)")
    args = p.parse_args(argv)
    harness.configure_threads(args.inter_op_threads, args.intra_op_threads)
    info = harness.machine(args.intra_op_threads)
    cores = harness.usable_cores(args.intra_op_threads)
    peaks = measure_peaks(args.repeats, args.quick, cores)
    conv = peaks["conv_train"]
    tables = [harness.table(
        ["kernel", "GFLOP/s (wall clock)", "GFLOP/s (CPU time)"],
        [[e["what"], f"{e['gflops_wall']:.0f}", f"{e['gflops_cpu']:.0f}"]
         for e in peaks.values()],
        notes="The conv peak is the large conv's training rate; the CPU-time rate is FLOPs "
              f"per CPU-second x {cores} cores, which other processes disturb much less.")]
    harness.publish(
        "peak", MODULE, argv, info,
        dict(conv, source="measured in this run"), tables, {"kernels": peaks}, args.out)


if __name__ == "__main__":
    main()
