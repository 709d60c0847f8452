"""Readable labels for grid rows."""
from experiments.class_names import class_name, class_names


def test_names_of_the_datasets_we_know():
    assert class_names("fashion_mnist", 10)[9] == "Ankle boot"
    assert class_name("cifar10", 3) == "cat"
    assert class_name("imagenet2012", 950) == "orange"
    assert class_name("imagenet2012", 0) in ("class 0 (n01440764)", "class 0")
    assert class_name("image_folder", 4) == "class 4"
    assert class_name("fashion_mnist", 12) == "class 12"
