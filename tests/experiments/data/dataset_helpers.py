"""Helpers shared by the data-layer tests: reading batches back and faking input contexts."""
import numpy as np
import tensorflow as tf

N_SYNTH = 1000  # examples per split in the synthetic IDX directory (conftest.synth_dir)


def decode_index(batch_images: np.ndarray) -> np.ndarray:
    """Recover the synthetic example index from padded [-1, 1] images (pixel (0,0) is at 2,2)."""
    pixels = np.rint((batch_images[:, 2, 2:4, 0] + 1.0) * 127.5).astype(int)
    return pixels[:, 0] * 256 + pixels[:, 1]


def take(ds, n):
    out = [(x.numpy(), y.numpy()) for x, y in ds.take(n)]
    return np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out])


def ctx(pipeline_id, pipelines=2, replicas=2):
    return tf.distribute.InputContext(num_input_pipelines=pipelines,
                                      input_pipeline_id=pipeline_id,
                                      num_replicas_in_sync=replicas)
