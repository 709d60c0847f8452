"""The training step's numeric precision: float32, or bfloat16 as a TPU computes.

On a TPU a float32 convolution or matmul multiplies in bfloat16 and accumulates in float32;
CPUs with AVX512_BF16 or AMX run oneDNN's bfloat16 convolutions about 2x faster than float32
the same way (inputs bfloat16, products accumulated in float32, the output rounded to
bfloat16). `bfloat16` here does that for every convolution, matmul and embedding lookup of
G and D, and keeps in float32 what bfloat16's 8-bit mantissa would damage:

* variables and Adam's moments (Keras's `mixed_bfloat16` policy keeps variables float32);
* the spectral-norm power iteration and sigma (the kernel is normalised in float32, then
  rounded once for the convolution);
* batch-norm statistics, cross-replica sums included, and the normalisation itself;
* the losses, every gradient (a cast's gradient is cast back), so the all-reduce and the
  noise-scale norms are float32 too.

G's plain Keras layers (Dense, Conv2D) take Keras's `mixed_bfloat16` dtype policy. The
spectrally normalised layers and the batch norm cast by hand: under a mixed policy Keras
autocasts every variable a layer reads inside `call` (even with `autocast=False`, Keras 3.15),
which would run the power iteration and the BN statistics in bfloat16.

`mixed_float16` (the GPU standard) needs dynamic loss scaling around this step's hand-written
gradient accumulation and a GPU to verify it on; neither is here, so it is refused by name
rather than offered untested.
"""
from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from common.errors import UserError
from sngan.options import PRECISIONS, REFUSED_PRECISIONS

# CPU flags with native bfloat16 dot products (oneDNN uses them for bf16 convolutions)
NATIVE_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


class PrecisionError(UserError, RuntimeError):
    """The hardware cannot run the asked precision natively (the message says what lacks)."""


@dataclasses.dataclass(frozen=True)
class Precision:
    """Where a model computes in reduced precision.

    `compute`: the dtype of convolution / matmul / embedding inputs. `activations`: the dtype
    the layers hand each other. bfloat16 activations measured faster on CPU than casting each
    reduced op's output back to float32 (1.37x against 1.29x over float32 at batch 64, 1.49x
    against 1.35x at 512; docs/benchmarks.md), since the casts cost more than the element-wise
    work they would keep in float32.
    """
    name: str = "float32"
    compute: str = "float32"
    activations: str = "float32"

    @property
    def reduced(self) -> bool:
        return self.compute != "float32"

    def keras_policy(self):
        """The dtype policy for G's plain Keras layers."""
        return keras.DTypePolicy(f"mixed_{self.compute}" if self.reduced else "float32")

    def to_compute(self, x):
        return tf.cast(x, self.compute) if self.reduced and x.dtype != self.compute else x

    def to_activations(self, x):
        return tf.cast(x, self.activations) if x.dtype != self.activations else x

    def to_float32(self, x):
        return tf.cast(x, tf.float32) if x.dtype != tf.float32 else x


FLOAT32 = Precision()
# train.precision=bfloat16: bfloat16 compute and activations, the faster variant
BFLOAT16 = Precision("bfloat16", "bfloat16", "bfloat16")
# bfloat16 compute, float32 between layers: measured slower, kept for the benchmark's
# comparison (python -m benchmarks.step --precision float32,bfloat16,bfloat16_f32_activations)
BFLOAT16_F32_ACTIVATIONS = Precision("bfloat16_f32_activations", "bfloat16", "float32")
VARIANTS = {p.name: p for p in (FLOAT32, BFLOAT16, BFLOAT16_F32_ACTIVATIONS)}


def get(precision: str | Precision | None) -> Precision:
    """A Precision from its name (None: float32)."""
    if precision is None:
        return FLOAT32
    if isinstance(precision, Precision):
        return precision
    if precision in REFUSED_PRECISIONS:
        raise ValueError(f"precision {precision!r} is not offered: "
                         f"{REFUSED_PRECISIONS[precision]}")
    if precision not in VARIANTS:
        raise ValueError(f"unknown precision {precision!r}; use one of {list(PRECISIONS)} "
                         f"(benchmarks also take {sorted(set(VARIANTS) - set(PRECISIONS))})")
    return VARIANTS[precision]


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str] | None:
    """The CPU's feature flags, or None where /proc/cpuinfo cannot be read (not Linux)."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        return None
    return set()


def hardware_problem(precision: str, device_kind: str, emulated_ok: bool = False,
                     flags: set[str] | None = None) -> str | None:
    """Why `precision` should not run on this hardware, in one line; None if it may.

    A CPU without native bfloat16 instructions runs bfloat16 convolutions emulated, slower
    than float32: refused unless `emulated_ok`. TPUs compute bfloat16 natively; on GPUs it
    needs compute capability 8.0 or newer, which TensorFlow checks when the kernel runs.
    """
    if not get(precision).reduced or emulated_ok or device_kind != "CPU":
        return None
    flags = cpu_flags() if flags is None else flags
    if flags is not None and flags & set(NATIVE_BF16_CPU_FLAGS):
        return None
    seen = "cannot read /proc/cpuinfo" if flags is None else "this CPU lacks both"
    return (f"train.precision={precision} needs a CPU with native bfloat16 instructions "
            f"({' or '.join(f.upper() for f in NATIVE_BF16_CPU_FLAGS)}); {seen}, so bfloat16 "
            "would be emulated and slower than float32. Use train.precision=float32, or "
            "--set train.precision_emulated_ok=true to run it anyway")
