"""One file per experiment, in the big_vision style: each module's `get_config()` returns its
run config and its `SWEEPS` the named sweep axes (`experiments.config.SweepAxes`; the first is
the default). `python -m experiments ... --preset NAME [--sweep SWEEP]` names them.
"""
from __future__ import annotations

import importlib
import typing

from experiments.config import ConfigError, RunConfig, StudyComparison, SweepAxes

NAMES = ("fashion_mnist", "fashion_mnist_reference", "cifar10", "imagenet128")


def _module(name: str):
    if name not in NAMES:
        raise ConfigError(f"preset={name!r} is not one of {list(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


def preset(name: str, overrides: typing.Iterable[str] | dict = ()) -> RunConfig:
    """The experiment's run config, with 'section.field=value' overrides applied."""
    cfg = _module(name).get_config()
    return cfg.with_overrides(overrides) if overrides else cfg


def comparison(name: str) -> StudyComparison:
    """What the experiment's report compares (its module's COMPARISON, else the default)."""
    return getattr(_module(name), "COMPARISON", StudyComparison())


def sweeps(name: str) -> dict[str, SweepAxes]:
    return dict(_module(name).SWEEPS)


def sweep_axes(name: str, sweep: str | None = None) -> SweepAxes:
    """The experiment's named sweep; None: its first (default) one."""
    named = sweeps(name)
    if sweep is None:
        return next(iter(named.values()))
    if sweep not in named:
        raise ConfigError(f"preset {name!r} has no sweep {sweep!r}; it has {list(named)}")
    return named[sweep]
