"""CIFAR-10 as sngan_projection trains it."""
from experiments import configs
from experiments.configs import cifar10


def test_follows_sngan_projection():
    """G ch 256, D ch 128, n_dis 5, lr decayed linearly from step 0, the G update on 2x the D
    batch, samples drawn with BN running averages (decay 0.9), 5k samples vs the test set."""
    cfg = cifar10.get_config()
    assert (cfg.model.g_ch, cfg.model.d_ch, cfg.train.n_dis) == (256, 128, 5)
    assert cfg.train.lr_decay_start == 0 and cfg.train.g_batch_multiplier == 2
    assert cfg.eval.bn_mode == "moving" and cfg.model.g_bn_momentum == 0.9
    assert (cfg.eval.protocol, cfg.eval.num_fake, cfg.eval.num_real,
            cfg.eval.reference_split) == ("sngan_paper", 5_000, 10_000, "test")
    assert cfg.eval.classifier == "inception"
    assert configs.sweep_axes("cifar10").batch_sizes == (8, 16, 32, 64, 512)
