"""MPI-style collectives for use inside a replica step (TF-Replicator's in-step API).

Every function here is called from the `step_fn` that `Replicator.run` executes on each
replica. They also work with one replica and with TensorFlow's default strategy (where they
reduce to the identity), so a step written against them runs unchanged on 1 or N devices.
Gradients flow through `all_reduce` and `all_gather` (TensorFlow defines them), which is what
makes cross-replica batch norm train the same as batch norm on the concatenated batch.
"""
from __future__ import annotations

import tensorflow as tf

REDUCE_OPS = ("sum", "mean", "max", "min")


def _replica_context() -> tf.distribute.ReplicaContext:
    ctx = tf.distribute.get_replica_context()
    if ctx is None:
        raise RuntimeError("replication collectives must be called inside a replica step "
                           "(the step_fn given to Replicator.run), not in cross-replica context")
    return ctx


def replica_id() -> tf.Tensor:
    """This replica's index in 0..num_replicas_in_sync()-1, as an int32 scalar tensor."""
    rid = _replica_context().replica_id_in_sync_group
    return tf.cast(tf.convert_to_tensor(rid), tf.int32)


def num_replicas_in_sync() -> int:
    """Number of replicas taking part in every collective (all workers together)."""
    ctx = tf.distribute.get_replica_context()
    if ctx is None:  # cross-replica context: ask the strategy instead
        return tf.distribute.get_strategy().num_replicas_in_sync
    return ctx.num_replicas_in_sync


def all_reduce(x, op: str = "sum"):
    """Reduce `x` (a tensor or nest of tensors) over replicas; every replica gets the result.

    "sum"/"mean" use the strategy's all-reduce; "max"/"min" gather one copy per replica and
    reduce it locally (tf.distribute has no max all-reduce), which is fine for the small
    tensors (statistics, flags) they are meant for.
    """
    if op not in REDUCE_OPS:
        raise ValueError(f"all_reduce op must be one of {REDUCE_OPS}, got {op!r}")
    ctx = _replica_context()
    if op in ("sum", "mean"):
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM if op == "sum"
                              else tf.distribute.ReduceOp.MEAN, x)
    reduce_fn = tf.reduce_max if op == "max" else tf.reduce_min

    def one(t):
        t = tf.convert_to_tensor(t)
        return reduce_fn(ctx.all_gather(t[tf.newaxis], axis=0), axis=0)

    return tf.nest.map_structure(one, x)


def all_gather(x, axis: int = 0):
    """Concatenate every replica's `x` along `axis`, in replica order.

    Scalars are gathered into a vector of length num_replicas_in_sync().
    """
    ctx = _replica_context()

    def one(t):
        t = tf.convert_to_tensor(t)
        if t.shape.rank == 0:
            return ctx.all_gather(t[tf.newaxis], axis=0)
        return ctx.all_gather(t, axis=axis)

    return tf.nest.map_structure(one, x)


def _normalise_axes(axes, rank: int) -> list[int]:
    axes = [axes] if isinstance(axes, int) else list(axes)
    if not axes or any(not -rank <= a < rank for a in axes):
        raise ValueError(f"axes {axes} are empty or out of range for a rank-{rank} tensor")
    return sorted({a % rank for a in axes})


def cross_replica_moments(x, axes, keepdims: bool = False):
    """Mean and variance of `x` over `axes` of the GLOBAL batch (all replicas' shards).

    As TF-Replicator's cross-replica batch norm: all-reduce the sum, the sum of squares and
    the element count in one collective, then var = E[x^2] - E[x]^2 (clamped at 0). Half
    precision inputs are accumulated in float32 and the moments returned in float32.
    """
    x = tf.convert_to_tensor(x)
    if x.shape.rank is None:
        raise ValueError("cross_replica_moments needs a tensor of known rank")
    axes = _normalise_axes(axes, x.shape.rank)
    if x.dtype in (tf.float16, tf.bfloat16):
        x = tf.cast(x, tf.float32)
    local_sum = tf.reduce_sum(x, axis=axes, keepdims=True)
    local_sum_sq = tf.reduce_sum(tf.square(x), axis=axes, keepdims=True)
    local_count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(x), axes)), x.dtype)
    total, total_sq, count = all_reduce([local_sum, local_sum_sq, local_count], "sum")
    mean = total / count
    variance = tf.maximum(total_sq / count - tf.square(mean), 0.0)
    if not keepdims:
        mean, variance = tf.squeeze(mean, axes), tf.squeeze(variance, axes)
    return mean, variance


def average_loss(per_example_loss, global_batch_size: int) -> tf.Tensor:
    """This replica's share of the global-batch mean loss: sum(per_example_loss) / global batch.

    Replicated optimizers SUM gradients over replicas, so dividing by the global (not the
    per-replica) batch makes the summed gradient the gradient of the global mean loss.
    Same semantics as tf.nn.compute_average_loss.
    """
    if not isinstance(global_batch_size, int) or global_batch_size < 1:
        raise ValueError(f"global_batch_size must be a positive int, got {global_batch_size!r}")
    return tf.nn.compute_average_loss(per_example_loss, global_batch_size=global_batch_size)


def scale_regularization_loss(loss) -> tf.Tensor:
    """A per-model loss term (e.g. weight decay) divided by the replica count.

    Each replica adds it once; after the optimizer sums over replicas it counts once.
    """
    loss = tf.convert_to_tensor(loss)
    return loss / tf.cast(num_replicas_in_sync(), loss.dtype)
