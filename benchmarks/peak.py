"""This machine's measured float32 peak, what every "of peak" figure is a fraction of, and its
bfloat16 conv peak, what train.precision=bfloat16 is a fraction of.

    python -m benchmarks.peak [--repeats 5] [--quick] [--out DIR]

Kernels: a large matmul; a large 3x3 convolution like the cifar10 model's, forward alone and
forward + both backward passes (as in training: the "conv peak"); a fashion_mnist-sized
one (32 channels) for comparison; and the matmul and the conv peak again with bfloat16 inputs
(float32 accumulation: native on AVX512_BF16/AMX CPUs, emulated and slow elsewhere).
Writes benchmarks/results/peak.json.
"""
from __future__ import annotations

import argparse

from benchmarks import harness

MODULE = "benchmarks.peak"
# (batch, size, c_in, c_out, k): the cifar10-sized conv, and fashion_mnist's largest (D's
# first block on real + fake images at batch 64)
LARGE_CONV, LARGE_CONV_QUICK = (64, 16, 256, 256, 3), (32, 16, 256, 256, 3)
SMALL_CONV = (128, 32, 32, 32, 3)


def _conv_fn(batch, size, c_in, c_out, k, training: bool, dtype: str = "float32"):
    """A compiled conv (and, if training, its two backward ops) on variables; its FLOPs."""
    import tensorflow as tf

    x = tf.Variable(tf.cast(tf.random.normal([batch, size, size, c_in]), dtype))
    w = tf.Variable(tf.cast(tf.random.normal([k, k, c_in, c_out]), dtype))
    dy = tf.Variable(tf.cast(tf.random.normal([batch, size, size, c_out]), dtype))
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


def _conv_entry(shape, training: bool, repeats: int, cores: int,
                dtype: str = "float32") -> dict:
    fn, flop = _conv_fn(*shape, training=training, dtype=dtype)
    rate = harness.rates(flop, harness.median_seconds(fn, repeats, cores=cores))
    b, s, ci, co, k = shape
    what = "fwd + bwd-input + bwd-filter" if training else "forward"
    return {"what": f"conv {k}x{k} {ci}->{co} at {s}x{s}, batch {b}, {what}, {dtype}",
            "gflops_wall": rate.wall, "gflops_cpu": rate.cpu}


def conv_peak(repeats: int, quick: bool, cores: int, dtype: str = "float32") -> dict:
    """The conv peak alone (the large conv's training rate) in `dtype`."""
    return _conv_entry(LARGE_CONV_QUICK if quick else LARGE_CONV, True, repeats, cores, dtype)


def measure_peaks(repeats: int, quick: bool, cores: int) -> dict[str, dict]:
    import tensorflow as tf

    n = 2048 if quick else 4096
    out = {}
    for dtype, suffix in (("float32", ""), ("bfloat16", "_bfloat16")):
        a = tf.Variable(tf.cast(tf.random.normal([n, n]), dtype))
        b = tf.Variable(tf.cast(tf.random.normal([n, n]), dtype))
        mm = tf.function(lambda a=a, b=b: tf.matmul(a, b)[0, 0])
        rate = harness.rates(2 * n ** 3, harness.median_seconds(lambda mm=mm: mm().numpy(),
                                                                repeats, cores=cores))
        out["matmul" + suffix] = {"what": f"matmul {n}x{n}x{n}, {dtype}",
                                  "gflops_wall": rate.wall, "gflops_cpu": rate.cpu}
    large = LARGE_CONV_QUICK if quick else LARGE_CONV
    return {**out,
            "conv_forward": _conv_entry(large, False, repeats, cores),
            "conv_train": _conv_entry(large, True, repeats, cores),
            "conv32_train": _conv_entry(SMALL_CONV, True, repeats, cores),
            "conv_train_bfloat16": _conv_entry(large, True, repeats, cores, "bfloat16")}


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
              f"per CPU-second x {cores} cores, which other processes disturb much less. "
              "bfloat16 over float32, conv peak: "
              f"{peaks['conv_train_bfloat16']['gflops_wall'] / conv['gflops_wall']:.2f}x.")]
    harness.publish(
        "peak", MODULE, argv, info,
        dict(conv, source="measured in this run"), tables, {"kernels": peaks}, args.out)


if __name__ == "__main__":
    main()
