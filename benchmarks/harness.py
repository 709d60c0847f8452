"""What every benchmark shares: timing by medians, the machine's description, the synthetic
training input, and the JSON result file docs/benchmarks.md is built from.

Times are medians of repeats, by the wall clock and by this process's CPU time divided by the
cores it uses: on a shared machine the wall clock also counts time spent waiting for a core,
CPU time does not (though it counts threads spin-waiting for a preempted partner).
"""
from __future__ import annotations

import datetime
import os
import platform
import shlex
import statistics
import sys
import time

import numpy as np

from common import files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "benchmarks", "results")
SYNTHETIC_IMAGES = 1024  # distinct in-memory images the training benchmarks cycle through


def usable_cores(intra_op_threads: int | None = None) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cores, intra_op_threads) if intra_op_threads else cores


def configure_threads(inter_op: int | None, intra_op: int | None) -> None:
    """TensorFlow's thread pools; must run before TensorFlow executes its first op."""
    import tensorflow as tf

    if inter_op is not None:
        tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    if intra_op is not None:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op)


class Timing(tuple):
    """(wall, cpu): median seconds per call by the wall clock and by CPU time / cores."""

    @property
    def wall(self) -> float:
        return self[0]

    @property
    def cpu(self) -> float:
        return self[1]


def median_seconds(fn, repeats: int, inner: int = 1, warmup: int = 1,
                   cores: int | None = None) -> Timing:
    """Medians over `repeats` of the mean time of `inner` calls; `fn` must block (sync)."""
    cores = cores or usable_cores()
    for _ in range(warmup):
        fn()
    walls, cpus = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        for _ in range(inner):
            fn()
        walls.append((time.perf_counter() - t) / inner)
        cpus.append((time.process_time() - c) / inner / cores)
    return Timing((statistics.median(walls), statistics.median(cpus)))


def rates(flop: float, t: Timing) -> Timing:
    """GFLOP/s by the wall clock and by CPU time."""
    return Timing((flop / t.wall / 1e9, flop / t.cpu / 1e9))


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def vector_extensions() -> list[str]:
    """The SIMD extensions oneDNN's float32 kernels depend on most."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return []
    return [x for x in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if x in flags]


def machine(intra_op_threads: int | None = None) -> dict:
    import tensorflow as tf

    return {"cpu": cpu_model(), "vector_extensions": vector_extensions(),
            "cores_used": usable_cores(intra_op_threads), "logical_cpus": os.cpu_count(),
            "tensorflow": tf.__version__, "python": platform.python_version(),
            "load_average_at_start": round(os.getloadavg()[0], 2)}


def relative(path: str) -> str:
    """A path as stored in results: relative to the repository root."""
    return os.path.relpath(os.path.abspath(path), ROOT)


def command(module: str, argv: list[str] | None = None) -> str:
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python", "-m", module, *map(shlex.quote, args)])


def table(columns: list[str], rows: list[list], title: str | None = None,
          notes: str | None = None) -> dict:
    """A rendered table, cells already formatted (docs/benchmarks.md shows it as is)."""
    out = {"columns": columns, "rows": [[str(c) for c in row] for row in rows]}
    if title:
        out["title"] = title
    if notes:
        out["notes"] = notes
    return out


def write_result(name: str, module: str, argv, machine_info: dict, peak: dict | None,
                 tables: list[dict], data: dict, out_dir: str | None = None) -> str:
    """benchmarks/results/NAME.json (or OUT_DIR/NAME.json): the machine, the command, the
    peak the rates are measured against, the tables for the docs and the raw numbers."""
    info = dict(machine_info, load_average_at_end=round(os.getloadavg()[0], 2))
    result = {"benchmark": name, "provenance": "measured",
              "date": datetime.date.today().isoformat(), "command": command(module, argv),
              "machine": info, "peak": peak, "tables": tables, "data": data}
    path = os.path.join(out_dir or RESULTS_DIR, f"{name}.json")
    files.atomic_write_json(path, result)
    return path


def print_tables(tables: list[dict]) -> None:
    from benchmarks import build_docs

    print(build_docs.render_tables(tables), flush=True)


def publish(name: str, module: str, argv, machine_info: dict, peak: dict | None,
            tables: list[dict], data: dict, out_dir: str | None = None) -> str:
    """What every benchmark ends with: its JSON written (`write_result`), its tables printed
    as the docs will show them, and where the JSON went."""
    path = write_result(name, module, argv, machine_info, peak, tables, data, out_dir)
    print_tables(tables)
    print(f"wrote {path}")
    return path


# -- synthetic training input ----------------------------------------------------------------
def synthetic_input_fn_for(cfg):
    """`input_fn_for(skip)` for the trainer: in-memory uniform images with cycling labels, so
    a benchmark measures the step, not the input pipeline."""
    import tensorflow as tf

    r, c = cfg.model.resolution, cfg.model.image_channels
    images = np.random.default_rng(0).uniform(
        -1, 1, (SYNTHETIC_IMAGES, r, r, c)).astype(np.float32)
    labels = (np.arange(SYNTHETIC_IMAGES) % max(cfg.model.num_classes, 1)).astype(np.int32)

    def input_fn_for(skip):
        def input_fn(ctx=None):
            micro = cfg.train.global_batch_size // cfg.train.grad_accumulation
            b = ctx.get_per_replica_batch_size(micro) if ctx else micro
            ds = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
            return ds.batch(b, drop_remainder=True).prefetch(2)
        return input_fn
    return input_fn_for


def make_trainer(cfg, workdir: str, replicator_spec: str = "default",
                 precision: str | None = None):
    import replication
    from sngan.training import GANTrainer

    return GANTrainer(cfg.model, cfg.train, replication.make_replicator(replicator_spec),
                      synthetic_input_fn_for(cfg), workdir, precision=precision)
