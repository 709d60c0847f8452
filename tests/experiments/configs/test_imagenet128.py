"""The TF-Replicator study's numbers (arXiv 1902.00465, SN-GAN projection at 128x128)."""
from experiments import configs
from experiments.configs import imagenet128


def test_holds_the_paper_numbers():
    img = imagenet128.get_config()
    assert (img.model.resolution, img.model.num_classes, img.model.g_ch, img.model.d_ch) == \
        (128, 1000, 64, 64)
    assert (img.train.g_lr, img.train.beta1, img.train.beta2, img.train.n_dis) == \
        (2e-4, 0.0, 0.9, 5)
    assert (img.train.steps, img.train.lr_decay_start, img.train.global_batch_size) == \
        (450_000, 400_000, 64)
    assert img.train.g_batch_multiplier == 2 and img.eval.bn_mode == "moving"
    assert img.eval.sample_class == 950  # 'orange'
    assert (img.eval.num_fake, img.eval.num_real) == (50_000, 50_000)
    assert 64 in configs.sweep_axes("imagenet128").batch_sizes
