"""The shipped Fashion-MNIST classifier and the real test split, loaded once for the package
(test_base checks the shared batch loop through it, test_fashion_mnist the classifier itself)."""
import pytest

from experiments.config import EvalConfig
from experiments.data import fashion_mnist_images
from experiments.evaluation import classifiers


@pytest.fixture(scope="package")
def shipped():
    return classifiers.load_classifier(EvalConfig())


@pytest.fixture(scope="package")
def test_split():
    return fashion_mnist_images("test")
