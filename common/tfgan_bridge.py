"""TF-GAN's `eval` and `losses` modules, imported without TF-GAN's top-level `__init__`.

`import tensorflow_gan` fails on TF >= 2.16: its `__init__` imports the removed
`tf.estimator` (and `distutils`, gone in Python 3.12). The metric and loss modules themselves
only need TensorFlow, TF-Probability and TF-Hub, so we register bare package objects for
`tensorflow_gan` and `tensorflow_gan.python` (pointing at the installed files) and import the
two sub-packages directly. Every other module in this project goes through here.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

_PACKAGES = ("tensorflow_gan", "tensorflow_gan.python")


def _install_bare_packages() -> None:
    spec = importlib.util.find_spec("tensorflow_gan") if "tensorflow_gan" not in sys.modules \
        else None
    if spec is None:
        if "tensorflow_gan" in sys.modules:
            return  # already importable (a working TF-GAN, or installed by us earlier)
        raise ImportError("tensorflow-gan is not installed: pip install tensorflow-gan")
    root = spec.submodule_search_locations[0]
    for name, path in zip(_PACKAGES, (root, os.path.join(root, "python"))):
        module = types.ModuleType(name)
        module.__path__ = [path]
        module.__file__ = os.path.join(path, "__init__.py")
        sys.modules[name] = module


_install_bare_packages()
eval = importlib.import_module("tensorflow_gan.python.eval")  # noqa: A001  (TF-GAN's name)
losses = importlib.import_module("tensorflow_gan.python.losses")
losses_impl = importlib.import_module("tensorflow_gan.python.losses.losses_impl")

__all__ = ["eval", "losses", "losses_impl"]
