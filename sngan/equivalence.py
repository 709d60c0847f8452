"""The GAN trainer's own equivalence checks: R replicas against one in the run's precision,
and a checkpoint that restores what was written.

Shared by the tests (tests/sngan/test_precision.py, tests/sngan/test_training.py) and by
`python -m experiments selfcheck`, which runs them on the user's devices, so the two use the
same data, the same state and the same tolerances.

Tolerances. float32 steps of R replicas equal one replica's to round-off (FLOAT32_LOSS_*, as
replication/equivalence.py). bfloat16 keeps 8 significant bits: each rounding is within
2^-9 = 0.2% relative, and a forward and backward pass rounds every layer's inputs, so losses
agree within 3% plus 0.02 absolute (hinge losses pass near 0); per-replica batch norm, the
fault this exists to catch, is further off than that (tests/sngan/test_precision.py checks
that the control's gap is larger). A checkpoint restores every variable bit for bit; STATE_*
allows only what a resumed step's different summation order could add.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

LOSS_RTOL, LOSS_ATOL = 0.03, 0.02  # reduced precision (bfloat16) against float32 or 1 replica
FLOAT32_LOSS_RTOL, FLOAT32_LOSS_ATOL = 2e-5, 2e-5
STATE_RTOL, STATE_ATOL = 1e-5, 1e-6
LOSS_KEYS = ("d_loss", "g_loss")


def loss_tolerance(precision: str) -> tuple[float, float]:
    """(rtol, atol) for the losses of R replicas against one, in `precision`."""
    return (FLOAT32_LOSS_RTOL, FLOAT32_LOSS_ATOL) if precision == "float32" else (
        LOSS_RTOL, LOSS_ATOL)


def synthetic_input_fn(global_batch: int, seed: int = 0, images: int = 256):
    """`input_fn_for(skip_batches)` for GANTrainer: random 32x32x1 'images' and 10 labels in a
    fixed order (like the study's seeded pipeline), sharded per worker, so any replica count
    on any number of workers sees the same global batches."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (images, 32, 32, 1)).astype(np.float32)
    y = rng.integers(0, 10, images).astype(np.int32)

    def input_fn_for(skip_batches: int):
        def input_fn(ctx=None):
            b = ctx.get_per_replica_batch_size(global_batch) if ctx else global_batch
            ds = tf.data.Dataset.from_tensor_slices((x, y))
            ds = ds.shuffle(images, seed=seed, reshuffle_each_iteration=False).repeat()
            ds = ds.skip(skip_batches * global_batch)
            if ctx is not None and ctx.num_input_pipelines > 1:
                ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
            return ds.batch(b, drop_remainder=True)
        return input_fn
    return input_fn_for


def losses_agree(run: list[dict], reference: list[dict], precision: str) -> tuple[bool, float]:
    """Whether every loss of `run` is within `precision`'s tolerance of `reference`'s; and the
    largest |difference|."""
    rtol, atol = loss_tolerance(precision)
    pairs = [(a[k], b[k]) for a, b in zip(run, reference) for k in LOSS_KEYS]
    if len(run) != len(reference) or not pairs or not np.all(np.isfinite(pairs)):
        return False, float("inf")
    gap = max(abs(a - b) for a, b in pairs)
    return all(abs(a - b) <= atol + rtol * abs(b) for a, b in pairs), gap


def trainer_state(trainer) -> dict[str, np.ndarray]:
    """Everything a resumed run must get back: G, D, their Adam slots (and iteration
    counters), the EMA generator, SN u vectors and BN statistics (in the weights), the step."""
    groups = {"G": trainer.generator.weights, "D": trainer.discriminator.weights,
              "G_adam": trainer.g_opt.optimizer.variables,
              "D_adam": trainer.d_opt.optimizer.variables,
              "G_ema": trainer.g_ema.weights if trainer.g_ema is not None else []}
    out = {f"{group}|{i:03d}|{v.path.split('/', 1)[-1]}": np.asarray(v.numpy())
           for group, variables in groups.items() for i, v in enumerate(variables)}
    out["step"] = np.asarray(trainer.global_step.numpy())
    return out


def state_gap(got: dict, expected: dict) -> tuple[float, str | None]:
    """(largest |difference| / (STATE_ATOL + STATE_RTOL |expected|), the variable where it is)
    over two trainer_state()s; inf and the first differing key if the variables differ."""
    if got.keys() != expected.keys():
        return float("inf"), sorted(set(got) ^ set(expected))[0]
    worst, where = 0.0, None
    for key, ref in expected.items():
        a, b = np.asarray(got[key], np.float64), np.asarray(ref, np.float64)
        excess = float((np.abs(a - b) / (STATE_ATOL + STATE_RTOL * np.abs(b))).max()) \
            if a.size else 0.0
        if not np.isfinite(excess):
            return float("inf"), key
        if excess > worst:
            worst, where = excess, key
    return worst, where


def damage(checkpoint_prefix: str) -> None:
    """Truncate a written checkpoint's data, as a full disk or a bad copy would: restoring the
    directory then falls back to an older checkpoint (sngan/checkpoints.py), so the weights
    restored are not the ones written. `selfcheck --inject-fault checkpoint` uses it."""
    import glob
    for path in glob.glob(checkpoint_prefix + ".data-*"):
        with open(path, "r+b") as f:
            f.truncate(min(100, f.seek(0, 2)))
