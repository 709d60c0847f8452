"""Export a generator as a TF SavedModel that needs nothing of this package to run.

Serving signature `serving_default`: z float32 [N, z_dim], labels int32 [N] ->
{"images": float32 [N, H, W, C] in [-1, 1]}. The generator's batch norm is baked in with the
statistics of the chosen sampling mode:
- `moving`: the running averages accumulated in training (how sngan_projection samples);
- `standing`: averages of batch statistics over fresh batches, computed just before export
  (compare_gan / BigGAN), usually the more robust choice;
- `batch`: statistics of each served batch, as in training; outputs then depend on what else
  is in the batch, so serve whole batches of a few hundred.
"""
from __future__ import annotations

import tensorflow as tf

from sngan.options import BN_MODES


class _Served(tf.Module):
    def __init__(self, generator, z_dim: int, conditional: bool, training: bool):
        super().__init__()
        # Track the variables, not the Keras model (saving would trace its call without labels)
        self.variables_ = [getattr(v, "value", v) for v in generator.weights]

        @tf.function(input_signature=[tf.TensorSpec([None, z_dim], tf.float32, name="z"),
                                      tf.TensorSpec([None], tf.int32, name="labels")])
        def serve(z, labels):
            images = generator(z, labels if conditional else None, training=training)
            return {"images": tf.clip_by_value(images, -1.0, 1.0)}

        self.serve = serve


def export_generator(sampler, out_dir: str, bn_mode: str = "standing", seed: int = 0,
                     standing_batches: int = 10, batch_size: int = 512) -> str:
    """Writes the SavedModel of `sampler.generator` to `out_dir`; returns `out_dir`.

    `sampler` is the generator's `sngan.sampling.Sampler` (it computes standing statistics);
    moving statistics are restored afterwards, so exporting never changes the model.
    """
    if bn_mode not in BN_MODES:
        raise ValueError(f"bn_mode={bn_mode!r} is not one of {BN_MODES}")
    saved = sampler.bn_state()
    try:
        if bn_mode == "standing":
            sampler.set_bn_state(sampler.standing_statistics(seed, standing_batches, batch_size))
        module = _Served(sampler.generator, sampler.z_dim, sampler.num_classes > 0,
                         training=bn_mode == "batch")
        tf.saved_model.save(module, out_dir, signatures={"serving_default": module.serve})
    finally:
        sampler.set_bn_state(saved)
    return out_dir
