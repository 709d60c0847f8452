"""Human-readable class names for labelling rows of sample grids.

* Fashion-MNIST and CIFAR-10: their ten names, in label order.
* ImageNet-1k: read at first use, offline, from files the installed `tensorflow_datasets`
  ships (it is not imported, only its files are read): the 1000 names in the standard
  (sorted WordNet id) order of `imagenet2012`, and the synset order of `imagenet_resized`,
  whose label indices differ (e.g. 'orange' is 950 in imagenet2012 but 318 in
  imagenet_resized). Without those files a small built-in table is used.
* Anything else (image_folder, unknown indices): "class N".

By default the first of ImageNet's comma-separated synonyms is given ("tench", not "tench,
Tinca tinca"); `imagenet_class_names(short=False)` has the full names.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

FASHION_MNIST = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                 "Sneaker", "Bag", "Ankle boot")
CIFAR10 = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck")
NAMES: dict[str, tuple[str, ...]] = {"fashion_mnist": FASHION_MNIST, "cifar10": CIFAR10}

# Used only when tensorflow_datasets' label files are not installed. Standard imagenet2012
# index -> (short name, index of the same synset in imagenet_resized).
IMAGENET_FALLBACK: dict[int, tuple[str, int]] = {
    0: ("tench", 448), 1: ("goldfish", 449), 88: ("macaw", 408),
    207: ("golden retriever", 124), 281: ("tabby", 173), 291: ("lion", 189),
    388: ("giant panda", 168), 417: ("balloon", 232), 430: ("basketball", 907),
    511: ("convertible", 267), 817: ("sports car", 273), 933: ("cheeseburger", 992),
    950: ("orange", 318), 963: ("pizza", 947), 970: ("alp", 360), 980: ("volcano", 361),
    999: ("toilet tissue", 888),
}
NUM_IMAGENET_CLASSES = 1000

# Files inside the tensorflow_datasets package (paths as of tensorflow-datasets 4.9).
_TFDS_NAMES = ("datasets", "siscore", "labels.py")  # IMAGENET_LABELS_LIST, standard order
_TFDS_SYNSETS = ("datasets", "imagenet2012", "labels.txt")  # wnids, standard order
_TFDS_RESIZED_SYNSETS = ("image_classification", "imagenet_resized_labels.txt")


def _tfds_root() -> Path | None:
    """The tensorflow_datasets package folder, found without importing the package."""
    try:
        spec = importlib.util.find_spec("tensorflow_datasets")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _literal_list(path: Path, name: str) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            value = ast.literal_eval(node.value)
            return [str(v) for v in value] if isinstance(value, list) else None
    return None


@functools.lru_cache(maxsize=1)
def _imagenet_tables() -> tuple[list[str], list[int]] | None:
    """(full names in imagenet2012 order, imagenet_resized index -> imagenet2012 index)."""
    root = _tfds_root()
    if root is None:
        return None
    try:
        names = _literal_list(root.joinpath(*_TFDS_NAMES), "IMAGENET_LABELS_LIST")
        synsets = root.joinpath(*_TFDS_SYNSETS).read_text().split()
        resized = root.joinpath(*_TFDS_RESIZED_SYNSETS).read_text().split()
    except (OSError, SyntaxError, ValueError):
        return None
    n = NUM_IMAGENET_CLASSES
    if not names or len(names) != n or len(synsets) != n or sorted(resized) != sorted(synsets):
        return None
    standard_index = {wnid: i for i, wnid in enumerate(synsets)}
    return names, [standard_index[wnid] for wnid in resized]


def _short(name: str) -> str:
    return name.split(",")[0].strip()


def imagenet_class_names(short: bool = True) -> list[str] | None:
    """The 1000 ImageNet names in imagenet2012 label order, or None without tfds' files."""
    tables = _imagenet_tables()
    if tables is None:
        return None
    return [_short(n) for n in tables[0]] if short else list(tables[0])


def _imagenet_name(index: int, resized: bool) -> str | None:
    tables = _imagenet_tables()
    if tables is not None:
        names, resized_to_standard = tables
        if 0 <= index < NUM_IMAGENET_CLASSES:
            return _short(names[resized_to_standard[index] if resized else index])
        return None
    for standard, (name, resized_index) in IMAGENET_FALLBACK.items():
        if index == (resized_index if resized else standard):
            return name
    return None


def class_name(dataset: str, index: int) -> str:
    """The name of label `index` of `dataset` (a data.name such as 'fashion_mnist',
    'cifar10', 'imagenet2012', 'imagenet_resized/64x64'), else "class N"."""
    index = int(index)
    name = None
    if dataset in NAMES:
        names = NAMES[dataset]
        name = names[index] if 0 <= index < len(names) else None
    elif dataset.startswith("imagenet_resized"):
        name = _imagenet_name(index, resized=True)
    elif dataset.startswith("imagenet"):
        name = _imagenet_name(index, resized=False)
    return name if name is not None else f"class {index}"


def class_names(dataset: str, num_classes: int) -> list[str]:
    """`class_name(dataset, i)` for i in 0..num_classes-1 (e.g. the rows of a class grid)."""
    return [class_name(dataset, i) for i in range(num_classes)]
