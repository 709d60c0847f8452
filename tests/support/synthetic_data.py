"""A small deterministic input pipeline for trainer tests (no dataset on disk needed)."""
import numpy as np
import tensorflow as tf


def synthetic_input_fn(global_batch, seed=0, poison=False):
    """Random 'images' and labels; deterministic order, like the real pipeline; `poison`
    fills the images with NaN (a diverging run)."""
    rng = np.random.default_rng(seed)
    images = rng.uniform(-1, 1, (256, 32, 32, 1)).astype(np.float32)
    if poison:
        images[:] = np.nan
    labels = rng.integers(0, 10, 256).astype(np.int32)

    def input_fn_for(skip_batches):
        def input_fn(ctx=None):
            b = ctx.get_per_replica_batch_size(global_batch) if ctx else global_batch
            ds = tf.data.Dataset.from_tensor_slices((images, labels))
            ds = ds.shuffle(256, seed=seed, reshuffle_each_iteration=True).repeat()
            return ds.skip(skip_batches * global_batch).batch(b, drop_remainder=True)
        return input_fn
    return input_fn_for
