"""The TF-Replicator study (arXiv 1902.00465): SN-GAN projection on ImageNet at 128x128,
ch 64, 1000 classes, 450k generator steps with the lr decayed linearly from 400k, on GPUs.
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
        preset="imagenet128",
        data=DataConfig(name="imagenet2012", resolution=128,
                        resize_method="resize_shorter_center_crop"),
        model=ModelConfig(resolution=128, image_channels=3, num_classes=1000, z_dim=128,
                          g_ch=64, d_ch=64, g_bn_momentum=0.9),
        train=TrainConfig(global_batch_size=64, steps=450_000, n_dis=5,
                          lr_decay_start=400_000, g_batch_multiplier=2, replicator="gpu",
                          checkpoint_every=5_000, summary_every=1_000, log_every=100),
        eval=EvalConfig.for_protocol("standard", classifier="inception", every=50_000,
                                     sample_class=950, bn_mode="moving"),
    )


SWEEPS = {
    "default": SweepAxes(batch_sizes=(8, 16, 32, 64, 512), seeds=(0,)),
}
