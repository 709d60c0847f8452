"""Logical CPU devices, so data parallelism can be exercised on one machine.

TensorFlow fixes its device list when its runtime starts (at the first op, not at import),
and only once per process. A test session or benchmark therefore splits the CPU into the
largest number of devices it will need, up front, and builds `cpu:1`/`cpu:2`/`cpu:4`
replicators from subsets of them.
"""
from __future__ import annotations

import sys
import tempfile

import tensorflow as tf

from common import quiet_tf


def _cpu():
    return tf.config.list_physical_devices("CPU")[0]  # does not start the runtime


def configured_logical_cpus() -> int | None:
    """How many logical CPU devices were requested, or None if the CPU was never split."""
    config = tf.config.get_logical_device_configuration(_cpu())
    return len(config) if config else None


def configure_logical_cpus(n: int) -> None:
    """Split the physical CPU into `n` logical devices; call before TensorFlow runs any op.

    Idempotent for the same or a smaller `n` (a process that already has 4 devices can serve
    a request for 2). Raises RuntimeError, naming both counts, when the runtime has already
    started with fewer devices: the split can no longer change in this process.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"configure_logical_cpus needs a positive int, got {n!r}")
    have = configured_logical_cpus()
    if have is not None and have >= n:
        return
    cpu = _cpu()
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
    except RuntimeError as e:
        existing = len(tf.config.list_logical_devices("CPU"))
        if existing >= n:  # started unsplit but asked for 1, or split elsewhere: nothing to do
            return
        raise RuntimeError(
            f"cannot split the CPU into {n} logical devices: TensorFlow's runtime already "
            f"started with {existing}. Call replication.configure_logical_cpus({n}) before "
            "any TensorFlow op runs (at the top of the program, or in tests/conftest.py).") from e


def logical_device_names(kind: str) -> list[str]:
    """Names of the logical devices of `kind` ("CPU", "GPU", "TPU"); starts the runtime."""
    return [d.name for d in tf.config.list_logical_devices(kind)]


CUDA_PROBE_LINE = "failed call to cuInit"  # TensorFlow's E-level line on a machine without a GPU
_probed = False


def probe_platforms_without_cuda_line() -> None:
    """Let TensorFlow enumerate its devices now (where it probes CUDA), once per process,
    for a replicator that uses no GPU.

    On a machine without a GPU driver the probe prints an E-level `failed call to cuInit` line
    that no setting silences short of hiding every error (TF_CPP_MIN_LOG_LEVEL=3;
    CUDA_VISIBLE_DEVICES does not: tensorflow/tensorflow#37689). For a CPU replicator that
    line says nothing, so only it is dropped; every other line of the probe is passed on.
    Replicators that may use a GPU never call this: there the line is the first clue, and
    TensorFlow prints it when it first lists devices, after the cluster checks.
    """
    global _probed
    if _probed:
        return
    _probed = True
    with tempfile.TemporaryFile() as captured:
        with quiet_tf.stderr_to(captured.fileno()):
            tf.config.list_physical_devices()
        captured.seek(0)
        lines = captured.read().decode(errors="replace").splitlines(keepends=True)
    kept = "".join(line for line in lines if CUDA_PROBE_LINE not in line)
    if kept:
        sys.stderr.write(kept)
        sys.stderr.flush()
