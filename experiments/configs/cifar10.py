"""Conditional SN-GAN on CIFAR-10 with the ResNet as sngan_projection trains it: G ch 256,
D ch 128, n_dis 5, lr decayed linearly from step 0 to the end, the G update on 2x the D batch,
BN running averages (decay 0.9) used when sampling, scored with Inception.
"""
from experiments.config import (
    DataConfig,
    EvalConfig,
    ModelConfig,
    RunConfig,
    SweepAxes,
    TrainConfig,
)


def get_config() -> RunConfig:
    return RunConfig(
        preset="cifar10",
        data=DataConfig(name="cifar10", resolution=32, resize_method="resize"),
        model=ModelConfig(resolution=32, image_channels=3, num_classes=10, z_dim=128,
                          g_ch=256, d_ch=128, g_bn_momentum=0.9),
        train=TrainConfig(global_batch_size=64, steps=50_000, n_dis=5, lr_decay_start=0,
                          g_batch_multiplier=2, checkpoint_every=2_000, summary_every=500,
                          log_every=100),
        eval=EvalConfig.for_protocol("sngan_paper", classifier="inception", every=5_000,
                                     bn_mode="moving"),
    )


SWEEPS = {
    "default": SweepAxes(batch_sizes=(8, 16, 32, 64, 512), seeds=(0,)),
}
