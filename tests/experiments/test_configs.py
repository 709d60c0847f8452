"""experiments/configs: one file per experiment; --preset names it, --sweep one of its sweeps."""
import json

import pytest

from experiments import config as c
from experiments import configs


@pytest.mark.parametrize("name", configs.NAMES)
def test_every_config_validates_round_trips_and_has_a_default_sweep(name):
    cfg = configs.preset(name)
    again = c.RunConfig.from_json(cfg.to_json())
    assert again == cfg and json.loads(again.to_json()) == json.loads(cfg.to_json())
    assert configs.sweep_axes(name) == next(iter(configs.sweeps(name).values()))
    for axes in configs.sweeps(name).values():
        assert isinstance(axes, c.SweepAxes)
        configs.preset(name, axes.overrides())  # every sweep's settings are a valid config


def test_presets_take_overrides():
    cfg = configs.preset("fashion_mnist", ["train.global_batch_size=128"])
    assert cfg.train.global_batch_size == 128
    assert configs.preset("fashion_mnist", {"train.steps": 7}).train.steps == 7


def test_unknown_names_are_refused_naming_the_choices():
    with pytest.raises(c.ConfigError, match="preset='mnist' is not one of"):
        configs.preset("mnist")
    with pytest.raises(c.ConfigError, match=r"has no sweep 'v9'; it has \['v2', 'more_seeds'"):
        configs.sweep_axes("fashion_mnist_reference", "v9")


def test_sngan_paper_is_the_fast_protocol_by_another_name():
    assert c.EVAL_PROTOCOLS["sngan_paper"] == c.EVAL_PROTOCOLS["fast"]
    fast, paper = (c.EvalConfig.for_protocol(p) for p in ("fast", "sngan_paper"))
    assert (paper.num_fake, paper.num_real, paper.reference_split, paper.is_splits) == (
        fast.num_fake, fast.num_real, fast.reference_split, fast.is_splits)
