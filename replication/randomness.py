"""Per-replica random streams that do not depend on the replica count.

Every replica draws the WHOLE global batch from a stateless generator keyed by
(seed, step, stream) and keeps its own rows (replica r gets rows r*b .. (r+1)*b-1, b the
per-replica batch). So 1 replica and N replicas see the same global sample, each replica's
slice differs from the others, and a restart that restores `step` from a checkpoint redraws
exactly what it would have drawn. Drawing B rows where B/N are kept costs a little
arithmetic; for latents and labels that is negligible next to the model.

`stream` separates independent draws within one step (e.g. the latents of each of the
n_dis discriminator steps and of the generator step). The Philox algorithm is pinned so the
numbers are the same on CPU, GPU and TPU.
"""
from __future__ import annotations

import tensorflow as tf

from replication import collectives

_ALG = "philox"
_NORMAL, _UNIFORM_INT = 0, 1  # domain tags: normal and int draws from one key never share bits


def stream_key(seed, step, stream=0, kind: int = _NORMAL) -> tf.Tensor:
    """The stateless-RNG seed (shape [2], int64) for one (seed, step, stream, kind)."""
    base = tf.stack([tf.cast(seed, tf.int64), tf.cast(stream, tf.int64)])
    key = tf.random.experimental.stateless_fold_in(base, tf.cast(step, tf.int64), alg=_ALG)
    return tf.random.experimental.stateless_fold_in(key, kind, alg=_ALG)


def global_normal(seed, step, global_shape, dtype=tf.float32, stream=0) -> tf.Tensor:
    """The whole global batch of N(0, 1) samples; callable anywhere (host, eval, tests)."""
    return tf.random.stateless_normal(list(global_shape), seed=stream_key(seed, step, stream),
                                      dtype=dtype, alg=_ALG)


def global_uniform_int(seed, step, global_batch: int, maxval: int, stream=0) -> tf.Tensor:
    """The whole global batch of int32 labels uniform in [0, maxval); callable anywhere."""
    key = stream_key(seed, step, stream, kind=_UNIFORM_INT)
    return tf.random.stateless_uniform([global_batch], seed=key, minval=0, maxval=maxval,
                                       dtype=tf.int32, alg=_ALG)


def _this_replicas_rows(full: tf.Tensor) -> tf.Tensor:
    replicas = collectives.num_replicas_in_sync()
    rows = full.shape[0]
    if rows % replicas:
        raise ValueError(f"global batch {rows} is not divisible by {replicas} replicas")
    per_replica = rows // replicas
    blocks = tf.reshape(full, [replicas, per_replica] + full.shape[1:].as_list())
    return tf.gather(blocks, collectives.replica_id())  # keeps a static shape, unlike a slice


def replica_normal(seed, step, global_shape, dtype=tf.float32, stream=0) -> tf.Tensor:
    """This replica's rows of `global_normal(seed, step, global_shape)`; call in a replica step."""
    return _this_replicas_rows(global_normal(seed, step, global_shape, dtype, stream))


def replica_uniform_int(seed, step, global_batch: int, maxval: int, stream=0) -> tf.Tensor:
    """This replica's rows of `global_uniform_int(...)`; call in a replica step."""
    return _this_replicas_rows(global_uniform_int(seed, step, global_batch, maxval, stream))
