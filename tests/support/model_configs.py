"""Model and training configs for the model-library tests, without the study's config module:
sngan/ takes any object with these fields, so its tests do not import experiments/."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelCfg:
    resolution: int = 32
    image_channels: int = 1
    num_classes: int = 10
    z_dim: int = 16
    g_ch: int = 8
    d_ch: int = 8
    bn_cross_replica: bool = True
    g_bn_momentum: float = 0.99


@dataclass(frozen=True)
class TrainCfg:
    global_batch_size: int = 8
    steps: int = 4
    n_dis: int = 2
    loss: str = "hinge"
    g_lr: float = 2e-4
    d_lr: float = 2e-4
    beta1: float = 0.0
    beta2: float = 0.9
    lr_decay_start: int | None = None
    ema_decay: float | None = None
    grad_accumulation: int = 1
    g_batch_multiplier: int = 1
    noise_scale_every: int = 0  # off: these tests check the plain step
    replicator: str = "default"
    jit_compile: bool | None = None
    seed: int = 0
    checkpoint_every: int = 2
    summary_every: int = 2
    log_every: int = 100
    keep_checkpoints: int = 2


# The session's one tiny trained run (tests/sngan/conftest.py): 4 steps with an EMA generator
# and a decaying learning rate, so that resuming it must restore every kind of state.
TINY_RUN_TRAIN = TrainCfg(ema_decay=0.5, lr_decay_start=1)

# The study's three preset models (experiments/config.py; tests/experiments/test_config.py
# checks that these stay equal to the presets).
PRESET_MODELS = {
    "fashion_mnist": ModelCfg(32, 1, 10, z_dim=64, g_ch=32, d_ch=32),
    "cifar10": ModelCfg(32, 3, 10, z_dim=128, g_ch=256, d_ch=128, g_bn_momentum=0.9),
    "imagenet128": ModelCfg(128, 3, 1000, z_dim=128, g_ch=64, d_ch=64, g_bn_momentum=0.9),
}


def replace(cfg, **changes):
    return dataclasses.replace(cfg, **changes)
