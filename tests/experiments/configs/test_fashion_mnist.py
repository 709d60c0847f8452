"""The CPU-sized default study's config and its default sweep."""
from experiments import configs
from experiments.configs import fashion_mnist


def test_the_default_study():
    cfg = fashion_mnist.get_config()
    assert (cfg.data.name, cfg.model.resolution, cfg.model.image_channels,
            cfg.model.num_classes) == ("fashion_mnist", 32, 1, 10)
    assert (cfg.train.steps, cfg.train.n_dis, cfg.train.g_batch_multiplier) == (200, 2, 1)
    assert (cfg.eval.classifier, cfg.eval.protocol, cfg.eval.every, cfg.eval.replicates) == (
        "fashion_mnist_classifier", "fast", 50, 3)
    assert cfg.eval.sample_class == 9  # 'Ankle boot'


def test_the_default_sweep_holds_the_papers_comparison():
    axes = configs.sweep_axes("fashion_mnist")
    assert axes.batch_sizes == (8, 16, 32, 64, 512) and axes.seeds == (0,)
    assert {64, 512} <= set(axes.batch_sizes)
    assert (axes.budget, axes.lr_scaling, axes.arm, axes.overrides()) == (
        "equal_steps", "none", "", {})
