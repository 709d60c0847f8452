"""The config schema: overrides parse, bad values give clear errors, JSON round trip is exact
and strict, sweep axes validate. (The experiments' own configs: tests/experiments/configs/.)"""
import pytest

from experiments import config as c
from experiments.configs import preset


def test_overrides_parse_values_and_types():
    cfg = preset("fashion_mnist", ["train.global_batch_size=128", "train.ema_decay=0.999",
                                      "model.bn_cross_replica=false", "train.replicator=cpu:4",
                                      "train.lr_decay_start=none"])
    assert cfg.train.global_batch_size == 128
    assert cfg.train.ema_decay == 0.999
    assert cfg.model.bn_cross_replica is False
    assert cfg.train.replicator == "cpu:4"
    assert cfg.train.lr_decay_start is None


def test_named_protocol_brings_its_counts():
    cfg = preset("fashion_mnist", {"eval.protocol": "standard"})
    assert (cfg.eval.num_fake, cfg.eval.num_real, cfg.eval.reference_split) == \
        (50_000, 50_000, "train")
    with pytest.raises(c.ConfigError, match="protocol='custom'"):
        preset("fashion_mnist", {"eval.protocol": "standard", "eval.num_fake": 10})
    custom = preset("fashion_mnist", {"eval.protocol": "custom", "eval.num_fake": 100})
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
    (["train.global_batch_size=true"], r"train.global_batch_size=True has the wrong type"),
    (["train.g_lr=false"], "wrong type"),
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
        preset("fashion_mnist", overrides)
        return
    with pytest.raises(c.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        preset("fashion_mnist", overrides)


def test_configs_are_frozen():
    cfg = preset("fashion_mnist")
    with pytest.raises(Exception):
        cfg.train.steps = 5  # type: ignore[misc]


def test_unknown_dataset_classifier_mismatch():
    with pytest.raises(c.ConfigError, match="only scores fashion_mnist"):
        preset("cifar10", {"eval.classifier": "fashion_mnist_classifier"})


def test_an_override_is_checked_even_where_a_later_one_replaces_it():
    """A sweep sets every point's batch size over the user's: a boolean given for it is
    refused all the same, as in a config file (a bool is an int in Python: batch 1)."""
    c.check_overrides({"train.global_batch_size": 64, "train.g_lr": 1, "eval.protocol": "tiny"})
    with pytest.raises(c.ConfigError, match=r"^train.global_batch_size=True has the wrong type"):
        c.check_overrides({"train.global_batch_size": True})
    with pytest.raises(c.ConfigError, match="unknown config key 'train.bogus'; train has"):
        c.check_overrides({"train.bogus": 1})
    with pytest.raises(c.ConfigError, match="unknown config key 'train'; expected one of"):
        c.check_overrides({"train": 1})


def test_from_dict_rejects_unknown_and_null_fields():
    d = preset("fashion_mnist").to_dict()
    d["train"]["surprise"] = 1
    with pytest.raises(c.ConfigError, match="train.surprise"):
        c.RunConfig.from_dict(d)
    d = preset("fashion_mnist").to_dict()
    d["train"]["steps"] = None
    with pytest.raises(c.ConfigError, match="may not be null"):
        c.RunConfig.from_dict(d)


def test_replicas_in_spec():
    assert c.replicas_in_spec("default") == 1
    assert c.replicas_in_spec("cpu:4") == 4
    assert c.replicas_in_spec("gpu:8") == 8
    assert c.replicas_in_spec("gpu") is None
    assert c.replicas_in_spec("tpu") is None


def test_sweep_axes_validate_and_name_their_overrides():
    axes = c.SweepAxes(batch_sizes=(64,), seeds=(0, 1), budget="equal_images",
                       arm="equal_images", steps=8000, lr_decay_start=4000, eval_every=1000)
    assert axes.overrides() == {"train.steps": 8000, "train.lr_decay_start": 4000,
                                "eval.every": 1000}
    assert c.SweepAxes(batch_sizes=(8,)).overrides() == {}
    assert c.SweepAxes(batch_sizes=(8,), settings=(("train.n_dis", 1),)).overrides() == {
        "train.n_dis": 1}


@pytest.mark.parametrize("fields, message", [
    (dict(batch_sizes=()), "batch sizes must be positive"),
    (dict(batch_sizes=(8, 0)), "batch sizes must be positive"),
    (dict(batch_sizes=(8, 8)), "repeated sweep batch sizes"),
    (dict(batch_sizes=(8,), seeds=(0, 0)), "repeated sweep seeds"),
    (dict(batch_sizes=(8,), seeds=(-1,)), "seeds >= 0"),
    (dict(batch_sizes=(8,), lr_scaling="cubic"), "lr_scaling='cubic'"),
    (dict(batch_sizes=(8,), budget="equal_time"), "budget='equal_time'"),
    (dict(batch_sizes=(8,), arm="Equal Images"), "arm='Equal Images'"),
    (dict(batch_sizes=(8,), steps=0), "sweep steps must be >= 1"),
    (dict(batch_sizes=(8,), settings=(("precision", "bfloat16"),)), "section.field, value"),
    (dict(batch_sizes=(8, 16), steps_by_batch=((8, 100),)), r"no steps for batch sizes \[16\]"),
    (dict(batch_sizes=(8,), steps_by_batch=((8, 0),)), "steps >= 1"),
    (dict(batch_sizes=(8,), steps_by_batch=((8, 5), (8, 6))), "repeats a batch size"),
    (dict(batch_sizes=(8,), steps_by_batch=((8, 5),), budget="equal_images"),
     "budget='equal_images' would rescale"),
])
def test_bad_sweep_axes_are_refused(fields, message):
    with pytest.raises(c.ConfigError, match=message):
        c.SweepAxes(**fields)
