"""Readable class names for the rows of sample grids and comparison figures."""
from __future__ import annotations

import functools
import importlib.resources

CLASS_NAMES = {
    "fashion_mnist": ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                      "Sneaker", "Bag", "Ankle boot"),
    "cifar10": ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                "truck"),
}
# ImageNet-1k names of the classes the study shows (index: name); others fall back to their
# WordNet synset id from the label list TFDS ships, where it is installed.
IMAGENET_NAMES = {950: "orange", 951: "lemon", 954: "banana", 948: "Granny Smith",
                  1: "goldfish", 207: "golden retriever", 281: "tabby cat"}


@functools.lru_cache(maxsize=1)
def _imagenet_synsets() -> tuple[str, ...]:
    try:
        text = (importlib.resources.files("tensorflow_datasets") / "datasets" / "imagenet2012"
                / "labels.txt").read_text()
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return ()
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def class_name(dataset: str, index: int) -> str:
    names = CLASS_NAMES.get(dataset)
    if names is not None and 0 <= index < len(names):
        return names[index]
    if dataset.startswith("imagenet"):
        if index in IMAGENET_NAMES:
            return IMAGENET_NAMES[index]
        synsets = _imagenet_synsets()
        if 0 <= index < len(synsets):
            return f"class {index} ({synsets[index]})"
    return f"class {index}"


def class_names(dataset: str, num_classes: int) -> list[str]:
    return [class_name(dataset, i) for i in range(num_classes)]
