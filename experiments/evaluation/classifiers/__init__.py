"""Scoring classifiers behind one interface: images in [-1, 1] -> (logits, pooled features).

`fashion_mnist_classifier` is the embedded default (shipped weights, identical scores on every
machine); `fashion_mnist_resnet` a second, independent Fashion-MNIST network (another
architecture, recipe and seed) that checks the first's answers; `inception` is TF-GAN's
Inception-v3, the network published IS/FID numbers use.
"""
from __future__ import annotations

from experiments.evaluation.classifiers.base import Classifier, iterate_batches


def load_classifier(eval_cfg) -> Classifier:
    """The classifier named by `eval_cfg.classifier` (an `experiments.config.EvalConfig`)."""
    if eval_cfg.classifier == "fashion_mnist_classifier":
        from experiments.evaluation.classifiers import fashion_mnist

        return fashion_mnist.load()
    if eval_cfg.classifier == "fashion_mnist_resnet":
        from experiments.evaluation.classifiers import fashion_mnist_resnet

        return fashion_mnist_resnet.load()
    if eval_cfg.classifier == "inception":
        from experiments.evaluation.classifiers import inception

        return inception.load(eval_cfg.inception_path)
    raise ValueError(f"unknown classifier {eval_cfg.classifier!r}; expected "
                     "'fashion_mnist_classifier', 'fashion_mnist_resnet' or 'inception'")


__all__ = ["Classifier", "iterate_batches", "load_classifier"]
