"""Where a dataset's examples come from: the one place that decides IDX files, TFDS or a folder.

`DataConfig.source` names it ('auto' picks the dataset's usual source: IDX files for
Fashion-MNIST, TFDS for CIFAR-10/ImageNet, the folder for image_folder); `data_dir` is then only
a directory, never a mode switch.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from experiments.config import DataConfig

DEFAULT_SOURCE = {"fashion_mnist": "idx", "image_folder": "folder"}  # others: tfds


@dataclass(frozen=True)
class Source:
    kind: str  # 'idx' | 'tfds' | 'folder'
    directory: str | None  # None: the kind's default location

    def describe(self) -> str:
        """Identifies the files read, e.g. for the reference-statistics cache key."""
        if self.kind == "idx":
            from experiments.data import fashion_mnist
            return f"idx:{os.path.abspath(fashion_mnist.resolve_dir(self.directory))}"
        if self.kind == "folder":
            return f"folder:{os.path.abspath(self.directory)}"
        return f"tfds:{os.path.abspath(self.directory) if self.directory else 'default'}"


def resolve(data_cfg: DataConfig) -> Source:
    kind = data_cfg.source
    if kind == "auto":
        kind = DEFAULT_SOURCE.get(data_cfg.name, "tfds")
    return Source(kind, data_cfg.data_dir)
