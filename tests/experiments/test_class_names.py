"""Class names for grid rows: the ten-class datasets, ImageNet in both label orders, fallbacks."""
import pytest

from experiments import class_names as cn


def test_fashion_mnist_names_in_label_order():
    assert cn.class_names("fashion_mnist", 10) == [
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
        "Bag", "Ankle boot"]
    assert cn.class_name("fashion_mnist", 9) == "Ankle boot"


def test_cifar10_names_in_label_order():
    assert cn.class_names("cifar10", 10) == [
        "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
        "truck"]


@pytest.mark.parametrize("dataset, index", [("fashion_mnist", 10), ("fashion_mnist", -1),
                                            ("cifar10", 12), ("image_folder", 3),
                                            ("imagenet2012", 1000), ("mystery", 0)])
def test_unknown_classes_fall_back_to_class_n(dataset, index):
    assert cn.class_name(dataset, index) == f"class {index}"


def test_imagenet_orange_in_both_label_orders():
    """imagenet2012 uses sorted WordNet ids; imagenet_resized another synset order."""
    assert cn.class_name("imagenet2012", 950) == "orange"
    assert cn.class_name("imagenet_resized/64x64", 318) == "orange"
    assert cn.class_name("imagenet_resized/32x32", 318) == "orange"


def test_imagenet_names_come_from_installed_tfds():
    names = cn.imagenet_class_names()
    if names is None:
        pytest.skip("tensorflow_datasets' label files are not installed")
    assert len(names) == 1000 and len(set(cn.imagenet_class_names(short=False))) == 1000
    assert names[0] == "tench" and names[999] == "toilet tissue"
    assert cn.imagenet_class_names(short=False)[0] == "tench, Tinca tinca"
    assert cn.class_name("imagenet2012", 207) == "golden retriever"
    assert all(name and "class " not in name for name in cn.class_names("imagenet2012", 1000))


def test_builtin_imagenet_table_agrees_with_tfds():
    """The fallback (used without tfds) must say what the full tables say."""
    if cn.imagenet_class_names() is None:
        pytest.skip("tensorflow_datasets' label files are not installed")
    for standard, (name, resized) in cn.IMAGENET_FALLBACK.items():
        assert cn.class_name("imagenet2012", standard) == name
        assert cn.class_name("imagenet_resized/64x64", resized) == name


def test_fallback_without_tfds(monkeypatch):
    monkeypatch.setattr(cn, "_tfds_root", lambda: None)
    cn._imagenet_tables.cache_clear()
    try:
        assert cn.imagenet_class_names() is None
        assert cn.class_name("imagenet2012", 950) == "orange"
        assert cn.class_name("imagenet_resized/32x32", 318) == "orange"
        assert cn.class_name("imagenet2012", 951) == "class 951"
    finally:
        cn._imagenet_tables.cache_clear()
