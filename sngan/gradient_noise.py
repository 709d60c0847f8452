"""Squared gradient norms at a small and a big batch, taken inside a replica step, for the
noise scale (sngan/noise_scale.py turns them into B_simple).

The big batch is the global batch: its gradient is the all-reduced sum of the replicas'
gradients. The small batches are the units a step already has: each replica's share of each
accumulation micro-batch. With a single unit (one replica, no accumulation) the batch is cut
into `SPLITS` slices; every slice's gradient comes from the same forward pass through a
persistent tape (one spectral-norm power iteration, one set of BN statistics, as the update
itself), the last one as the full gradient minus the others, so the update applied is the
usual one and a measurement costs one extra backward pass per slice but the last.

Gradients of losses divided by the global batch (`replication.average_loss`) are what a unit
holds, so a unit's mean gradient is n_units times its gradient; see `small_and_big`.
"""
from __future__ import annotations

import tensorflow as tf

import replication
from sngan import noise_scale

SPLITS = 2  # slices of the batch when a step has only one small unit


def plan(num_replicas: int, accumulation: int) -> tuple[int, str]:
    """(slices per unit, name of the small batches' source) for a step's layout."""
    if num_replicas > 1 and accumulation > 1:
        return 1, "replicas x accumulation micro-batches"
    if num_replicas > 1:
        return 1, "replicas (per-replica vs all-reduced gradients)"
    if accumulation > 1:
        return 1, "accumulation micro-batches"
    return SPLITS, f"{SPLITS} slices of the batch (one forward pass)"


def tracker_for(every: int, num_replicas: int, accumulation: int, global_batch: int,
                g_batch_multiplier: int = 1) -> tuple[noise_scale.NoiseScaleTracker | None, int]:
    """(the tracker, slices per unit) for a trainer's layout; (None, 1) when `every` is 0."""
    if not every:
        return None, 1
    splits, source = plan(num_replicas, accumulation)
    units = num_replicas * accumulation * splits
    if global_batch % units:
        raise ValueError(f"the noise scale needs a global batch divisible by its {units} small "
                         f"batches ({source}); got batch {global_batch}: use an even batch or "
                         "train.noise_scale_every=0")
    g_batch = global_batch * g_batch_multiplier
    batches = {"d": (global_batch // units, global_batch), "g": (g_batch // units, g_batch)}
    return noise_scale.NoiseScaleTracker(every, batches, source), splits


class UnitNorms:
    """One replica's unit gradients' squared norms over an update; inactive, it adds no op
    (a plain tape, nothing measured), so a step that does not measure is the usual one."""

    def __init__(self, active: bool, splits: int):
        self.active, self.splits = active, splits
        self.total, self.units, self._losses = None, 0, None

    def tape(self) -> tf.GradientTape:
        return tf.GradientTape(persistent=self.active and self.splits > 1)

    def slice(self, per_example, denominator: int) -> None:
        """Call inside the tape, after the loss: the slices' losses, when slicing."""
        if self.active and self.splits > 1:
            self._losses = slice_losses(per_example, denominator, self.splits)

    def add(self, tape, variables, grads) -> None:
        """Count one unit (or its slices) whose summed gradient is `grads`."""
        if not self.active:
            return
        sq = (slices_squared_norm(tape, self._losses, variables, grads) if self.splits > 1
              else squared_norm(grads))
        self.total = sq if self.total is None else self.total + sq
        self.units += self.splits

    def result(self, player: str, grads) -> dict[str, tf.Tensor]:
        """{'noise/<player>_small_sq', 'noise/<player>_big_sq'} as this replica's share
        (their sum over replicas is the value, like the losses); {} when inactive."""
        if not self.active:
            return {}
        out = small_and_big(self.total, grads, self.units)
        share = 1.0 / replication.num_replicas_in_sync()
        return {f"noise/{player}_{k}": v * share for k, v in out.items()}


def squared_norm(grads) -> tf.Tensor:
    """Sum of squares of every gradient tensor, in float32."""
    return tf.add_n([tf.reduce_sum(tf.square(tf.cast(g, tf.float32))) for g in grads])


def slice_losses(per_example, denominator: int, splits: int) -> list[tf.Tensor]:
    """The shares of the loss sum(per_example) / denominator, one per equal slice of the
    batch; call inside the tape (which must see them, unstacked, to differentiate them)."""
    sums = tf.reduce_sum(tf.reshape(per_example, [splits, -1]), axis=1)
    return tf.unstack(sums / tf.cast(denominator, sums.dtype), num=splits)


def slices_squared_norm(tape, losses, variables, full_grads) -> tf.Tensor:
    """Sum over the slices of their gradients' squared norms; `full_grads` is the gradient of
    their sum, from the same persistent tape."""
    parts = [tape.gradient(loss, variables) for loss in losses[:-1]]
    last = [full - tf.add_n([p[i] for p in parts]) for i, full in enumerate(full_grads)]
    return tf.add_n([squared_norm(p) for p in parts] + [squared_norm(last)])


def small_and_big(units_squared_norm, grads, units_per_replica: int) -> dict[str, tf.Tensor]:
    """In a replica step: mean |G_small|^2 over every replica's units and |G_big|^2.

    `units_squared_norm` is the sum of this replica's unit gradients' squared norms and `grads`
    their sum, all of losses divided by the global batch. A unit then holds 1/n of the batch
    (n units in all) and its mean gradient is n times its gradient: the mean of |G_small|^2 is
    n * sum_u |g_u|^2, and the global batch's mean gradient is sum_u g_u.
    """
    total, big = replication.all_reduce([units_squared_norm, list(grads)], "sum")
    n_units = units_per_replica * replication.num_replicas_in_sync()
    return {"small_sq": float(n_units) * total, "big_sq": squared_norm(big)}
