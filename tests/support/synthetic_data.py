"""A small deterministic input pipeline for trainer tests (no dataset on disk needed)."""
import numpy as np
import tensorflow as tf


def synthetic_input_fn(global_batch, seed=0, poison=False, poison_after: int | None = None):
    """Random 'images' and labels; deterministic order, like the real pipeline; `poison`
    fills the images with NaN (a diverging run), `poison_after=k` every image after the first
    k global batches (a run that diverges after checkpoints were written)."""
    rng = np.random.default_rng(seed)
    images = rng.uniform(-1, 1, (256, 32, 32, 1)).astype(np.float32)
    if poison:
        images[:] = np.nan
    labels = rng.integers(0, 10, 256).astype(np.int32)
    first_bad = None if poison_after is None else poison_after * global_batch

    def input_fn_for(skip_batches):
        def input_fn(ctx=None):
            b = ctx.get_per_replica_batch_size(global_batch) if ctx else global_batch
            ds = tf.data.Dataset.from_tensor_slices((images, labels))
            # the same order from every iterator of the dataset, as the study's pipeline
            # (a trainer that restarts its iterator must see the same batches)
            ds = ds.shuffle(256, seed=seed, reshuffle_each_iteration=False).repeat()
            if first_bad is not None:
                ds = ds.enumerate().map(lambda i, xy: (
                    tf.where(i >= first_bad, np.float32(np.nan), xy[0]), xy[1]))
            return ds.skip(skip_batches * global_batch).batch(b, drop_remainder=True)
        return input_fn
    return input_fn_for
