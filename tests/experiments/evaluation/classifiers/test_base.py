"""What every classifier shares, through the shipped one: images as one array, a generator of
batches or (images, labels) pairs give the same activations; wrong ranges and shapes fail
loudly; an unknown classifier name is refused."""
import numpy as np
import pytest
import tensorflow as tf

from experiments.evaluation import classifiers


def test_streamed_batches_give_the_same_activations(shipped, test_split):
    images = test_split[0][:300]
    whole = shipped.activations(images, batch_size=300)
    streamed = shipped.activations((images[i:i + 70] for i in range(0, 300, 70)),
                                   batch_size=32)
    pairs = shipped.activations([(tf.constant(images[:150]), None),
                                 (tf.constant(images[150:]), None)])
    for got in (streamed, pairs):
        np.testing.assert_allclose(got[0], whole[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1], whole[1], rtol=1e-5, atol=1e-5)


def test_classifier_rejects_wrong_range_and_shape(shipped):
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        shipped.activations(np.full((2, 32, 32, 1), 255.0, np.float32))
    with pytest.raises(ValueError, match="shape"):
        shipped.activations(np.zeros((2, 28, 28, 1), np.float32))


def test_unknown_classifier_is_refused():
    class Cfg:
        classifier = "vgg"
    with pytest.raises(ValueError, match="unknown classifier"):
        classifiers.load_classifier(Cfg())
