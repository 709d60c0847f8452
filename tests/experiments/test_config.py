"""Configs: presets validate, JSON round trip is exact, bad values give clear errors."""
import json

import pytest

from experiments import config as c


@pytest.mark.parametrize("name", sorted(c.PRESETS))
def test_presets_round_trip_through_json(name):
    cfg = c.preset(name)
    again = c.RunConfig.from_json(cfg.to_json())
    assert again == cfg
    assert json.loads(again.to_json()) == json.loads(cfg.to_json())


def test_presets_hold_the_paper_numbers():
    img = c.preset("imagenet128")
    assert (img.model.resolution, img.model.num_classes, img.model.g_ch, img.model.d_ch) == \
        (128, 1000, 64, 64)
    assert (img.train.g_lr, img.train.beta1, img.train.beta2, img.train.n_dis) == \
        (2e-4, 0.0, 0.9, 5)
    assert (img.train.steps, img.train.lr_decay_start, img.train.global_batch_size) == \
        (450_000, 400_000, 64)
    assert img.eval.sample_class == 950  # 'orange'
    cifar = c.preset("cifar10")
    assert (cifar.model.g_ch, cifar.model.d_ch, cifar.train.n_dis) == (256, 128, 5)


def test_overrides_parse_values_and_types():
    cfg = c.preset("fashion_mnist", ["train.global_batch_size=128", "train.ema_decay=0.999",
                                      "model.bn_cross_replica=false", "train.replicator=cpu:4",
                                      "train.lr_decay_start=none"])
    assert cfg.train.global_batch_size == 128
    assert cfg.train.ema_decay == 0.999
    assert cfg.model.bn_cross_replica is False
    assert cfg.train.replicator == "cpu:4"
    assert cfg.train.lr_decay_start is None


def test_named_protocol_brings_its_counts():
    cfg = c.preset("fashion_mnist", {"eval.protocol": "standard"})
    assert (cfg.eval.num_fake, cfg.eval.num_real, cfg.eval.reference_split) == \
        (50_000, 50_000, "train")
    with pytest.raises(c.ConfigError, match="protocol='custom'"):
        c.preset("fashion_mnist", {"eval.protocol": "standard", "eval.num_fake": 10})
    custom = c.preset("fashion_mnist", {"eval.protocol": "custom", "eval.num_fake": 100})
    assert custom.eval.num_fake == 100


@pytest.mark.parametrize("overrides, message", [
    (["train.bogus=1"], "unknown config key 'train.bogus'"),
    (["nosection.x=1"], "unknown config key"),
    (["train.global_batch_size=0"], "global_batch_size must be > 0"),
    (["train.global_batch_size=-8"], "global_batch_size must be > 0"),
    (["train.global_batch_size=6", "train.replicator=cpu:4"], "not divisible by the 4 replicas"),
    (["train.global_batch_size=64", "train.grad_accumulation=3"], "not divisible by"),
    (["data.name=mnist"], "data.name='mnist' is not one of"),
    (["model.num_classes=7"], "has 10 classes"),
    (["train.loss=wgan"], "train.loss='wgan'"),
    (["eval.bn_mode=frozen"], "eval.bn_mode"),
    (["eval.classifier=inception"], None),  # allowed: Inception on Fashion-MNIST
    (["train.steps=1.5"], "wrong type"),
    (["train.n_dis=true"], "wrong type"),
    (["eval.batch_size=500", "train.replicator=cpu:8"], "eval.batch_size=500"),
    (["eval.standing_batches=0"], "eval.standing_batches=0"),
    (["eval.kid_subsets=5000"], "use eval.kid_subsets <= 2500"),
    (["eval.protocol=custom", "eval.num_fake=10", "eval.num_real=100", "eval.is_splits=1"],
     "use eval.kid_subsets <= 5"),
    (["train.jit_compile=true", "train.replicator=cpu:2", "eval.batch_size=500"],
     "train.jit_compile=true with 'cpu:2'"),
    (["train.jit_compile=true", "train.replicator=cpu:1"], None),  # one replica compiles
    (["train.jit_compile=true", "train.replicator=gpu:2"], None),  # not known to fail
])
def test_bad_values_are_refused_with_clear_errors(overrides, message):
    if message is None:
        c.preset("fashion_mnist", overrides)
        return
    with pytest.raises(c.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        c.preset("fashion_mnist", overrides)


def test_configs_are_frozen():
    cfg = c.preset("fashion_mnist")
    with pytest.raises(Exception):
        cfg.train.steps = 5  # type: ignore[misc]


def test_unknown_dataset_classifier_mismatch():
    with pytest.raises(c.ConfigError, match="only scores fashion_mnist"):
        c.preset("cifar10", {"eval.classifier": "fashion_mnist_classifier"})


def test_from_dict_rejects_unknown_and_null_fields():
    d = c.preset("fashion_mnist").to_dict()
    d["train"]["surprise"] = 1
    with pytest.raises(c.ConfigError, match="train.surprise"):
        c.RunConfig.from_dict(d)
    d = c.preset("fashion_mnist").to_dict()
    d["train"]["steps"] = None
    with pytest.raises(c.ConfigError, match="may not be null"):
        c.RunConfig.from_dict(d)


def test_replicas_in_spec():
    assert c.replicas_in_spec("default") == 1
    assert c.replicas_in_spec("cpu:4") == 4
    assert c.replicas_in_spec("gpu:8") == 8
    assert c.replicas_in_spec("gpu") is None
    assert c.replicas_in_spec("tpu") is None


def test_model_library_tests_use_the_presets_models():
    import dataclasses

    from model_configs import PRESET_MODELS
    for name, model in PRESET_MODELS.items():
        assert dataclasses.asdict(model) == dataclasses.asdict(c.preset(name).model), name


def test_presets_follow_the_reference_code():
    """sngan_projection: G update on 2x the D batch, CIFAR-10 lr decayed linearly from step 0,
    samples drawn with BN running averages (decay 0.9)."""
    for name in ("cifar10", "imagenet128"):
        cfg = c.preset(name)
        assert cfg.train.g_batch_multiplier == 2 and cfg.eval.bn_mode == "moving"
        assert cfg.model.g_bn_momentum == 0.9
    assert c.preset("cifar10").train.lr_decay_start == 0
    assert c.preset("fashion_mnist").train.g_batch_multiplier == 1
