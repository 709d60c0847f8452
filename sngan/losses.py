"""GAN losses per example, through TF-GAN's loss functions.

Losses are returned UNREDUCED ([B]) so the trainer can divide their sum by the GLOBAL batch
(over all replicas): a per-replica mean would weight replicas, not examples, and gradients
summed by the replicator would be R times too large.

* "hinge" (SN-GAN): D = relu(1 - D(x)) + relu(1 + D(G(z))), G = -D(G(z)).
* "non_saturating" (Goodfellow et al.): D = softplus(-D(x)) + softplus(D(G(z))),
  G = softplus(-D(G(z))) = -log sigmoid(D(G(z))); no label smoothing.
"""
from __future__ import annotations

import tensorflow as tf

from common import tfgan_bridge
from sngan.options import LOSSES

_NONE = tf.compat.v1.losses.Reduction.NONE
_impl = tfgan_bridge.losses_impl


def _check(kind: str) -> None:
    if kind not in LOSSES:
        raise ValueError(f"unknown GAN loss {kind!r}; expected one of {list(LOSSES)}")


def discriminator_loss(kind: str, real_logits, fake_logits) -> tf.Tensor:
    """Per-example discriminator loss [B] on paired real and generated logits [B]."""
    _check(kind)
    if kind == "hinge":
        return _impl.wasserstein_hinge_discriminator_loss(
            real_logits, fake_logits, loss_collection=None, reduction=_NONE)
    return _impl.modified_discriminator_loss(
        real_logits, fake_logits, label_smoothing=0.0, loss_collection=None, reduction=_NONE)


def generator_loss(kind: str, fake_logits) -> tf.Tensor:
    """Per-example generator loss [B] on the discriminator's logits for generated images."""
    _check(kind)
    if kind == "hinge":
        return _impl.wasserstein_generator_loss(
            fake_logits, loss_collection=None, reduction=_NONE)
    return _impl.modified_generator_loss(fake_logits, loss_collection=None, reduction=_NONE)
