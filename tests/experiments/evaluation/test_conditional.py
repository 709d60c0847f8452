"""Recognisability metrics against hand-made answers and independent brute-force references."""
import numpy as np
import pytest
import scipy.linalg

from experiments.evaluation import conditional


def test_conditional_accuracy_on_hand_made_logits():
    logits = np.array([[5, 0, 0], [0, 5, 0], [5, 0, 0], [0, 0, 5], [0, 5, 0]], float)
    labels = np.array([0, 1, 1, 2, 1])  # right, right, wrong, right, right
    out = conditional.conditional_accuracy(logits, labels, num_classes=4)
    assert out["accuracy"] == pytest.approx(0.8)
    assert out["per_class_accuracy"][:3] == pytest.approx([1.0, 2 / 3, 1.0])
    assert np.isnan(out["per_class_accuracy"][3])  # class 3 was never asked for
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        conditional.conditional_accuracy(logits, labels, num_classes=2)


def _fid_by_hand(a, b):
    mu_a, mu_b = a.mean(0), b.mean(0)
    ca, cb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root = scipy.linalg.sqrtm(ca @ cb).real
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(ca + cb - 2 * root))


def test_intra_fid_is_the_mean_of_per_class_fids():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(300, 4))
    real_labels = np.repeat(np.arange(3), 100)
    fake = rng.normal(size=(150, 4)) + np.repeat(np.arange(3), 50)[:, None] * 0.5
    fake_labels = np.repeat(np.arange(3), 50)
    out = conditional.intra_fid(fake, fake_labels, real, real_labels, num_classes=3)
    by_hand = [_fid_by_hand(real[real_labels == c], fake[fake_labels == c]) for c in range(3)]
    assert out["per_class_fid"] == pytest.approx(by_hand, rel=1e-6)
    assert out["intra_fid"] == pytest.approx(np.mean(by_hand), rel=1e-6)
    with pytest.raises(ValueError, match="class 2 has 1 generated"):
        conditional.intra_fid(fake[:101], fake_labels[:101], real, real_labels, num_classes=3)
