"""The CPU-sized default study: class-conditional SN-GAN on Fashion-MNIST at 32x32 (padded
from 28x28), scored by the shipped classifier, at a budget sized for a 2-core CPU.
"""
from experiments.config import (
    DataConfig,
    EvalConfig,
    ModelConfig,
    RunConfig,
    StudyComparison,
    SweepAxes,
    TrainConfig,
)

# study v5's lr factors (its sweeps are in fashion_mnist_reference.py), arms lr_xF with 'p'
# for the point (0.5 -> lr_x0p5)
LR_SEARCH_FACTORS = (0.125, 0.25, 0.5, 2.0, 4.0, 8.0, 16.0, 32.0)


def lr_search_arm(factor: float) -> str:
    return "lr_x" + f"{factor:g}".replace(".", "p")


# What the report compares (the reference run's points record this preset): batch 64 -> 512
# as TF-Replicator (arXiv 1902.00465); the schedules meet at the decayed-lr sweep's last step;
# the constant-lr arm's fit is the headline; the lr search reuses it as factor 1 and the probe.
COMPARISON = StudyComparison(
    baseline_batch=64, target_batch=512, bigger_batches=(128, 256, 512), schedule_step=1000,
    headline_arm="constant_lr", lr_search_arms=tuple(map(lr_search_arm, LR_SEARCH_FACTORS)),
    lr_search_reuses=("constant_lr", "lr_probe"))


def get_config() -> RunConfig:
    return RunConfig(
        preset="fashion_mnist",
        data=DataConfig(name="fashion_mnist", resolution=32, resize_method="pad"),
        model=ModelConfig(resolution=32, image_channels=1, num_classes=10, z_dim=64,
                          g_ch=32, d_ch=32),
        train=TrainConfig(global_batch_size=64, steps=200, n_dis=2, checkpoint_every=50,
                          summary_every=25, log_every=25),
        eval=EvalConfig.for_protocol("fast", classifier="fashion_mnist_classifier",
                                     sample_class=9, every=50, replicates=3),
    )


SWEEPS = {
    # The paper's comparison (64 vs 512) and five batch sizes, enough for the trend test to
    # reach p < 0.05. 128 and 256 are left out: they hold 37% of the full range's images.
    "default": SweepAxes(batch_sizes=(8, 16, 32, 64, 512), seeds=(0,)),
}
