"""Package-level names re-exported lazily (PEP 562).

`replication` and `experiments.data` re-export their submodules' public names, but importing
those submodules eagerly would start TensorFlow where a caller only needs something light
(starting worker processes, reading IDX headers before TensorFlow's runtime is configured).
"""
from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, list[str]], namespace: dict):
    """Returns (__getattr__, __dir__, __all__) for `package`: each name in `exports`
    ({submodule: [names]}) is imported from its submodule on first use and then cached in
    `namespace` (the package's globals())."""
    module_of = {name: module for module, names in exports.items() for name in names}
    names = sorted(module_of)

    def __getattr__(name):
        if name in module_of:
            value = getattr(importlib.import_module(f"{package}.{module_of[name]}"), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__, names
