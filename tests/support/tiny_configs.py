"""The model library tests' small configs: the real `sngan.config` classes at test sizes
(G and D width 8, z 16, batch 8, 4 steps of 2 D updates, no noise-scale measurement)."""
from __future__ import annotations

import dataclasses

from sngan.config import ModelConfig, TrainConfig

TINY_MODEL = ModelConfig(z_dim=16, g_ch=8, d_ch=8)
TINY_TRAIN = TrainConfig(global_batch_size=8, steps=4, n_dis=2, noise_scale_every=0,
                         checkpoint_every=2, summary_every=2, log_every=100)
# The session's one tiny trained run (tests/sngan/conftest.py): 4 steps with an EMA generator
# and a decaying learning rate, so that resuming it must restore every kind of state.
TINY_RUN_TRAIN = dataclasses.replace(TINY_TRAIN, ema_decay=0.5, lr_decay_start=1)


def tiny_model(**changes) -> ModelConfig:
    return dataclasses.replace(TINY_MODEL, **changes)


def tiny_train(**changes) -> TrainConfig:
    return dataclasses.replace(TINY_TRAIN, **changes)
