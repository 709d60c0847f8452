"""The TF-GAN bridge imports TF-GAN's metric and loss modules on TF >= 2.16, and those metrics
equal direct numpy/scipy computations in float64 (relative error <= 1e-6)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
import scipy.special
import tensorflow as tf

from common import tfgan_bridge

RTOL = 1e-6


def test_bridge_exposes_eval_and_losses_without_tfgan_init():
    assert callable(tfgan_bridge.eval.frechet_classifier_distance_from_activations)
    assert callable(tfgan_bridge.eval.classifier_score_from_logits)
    assert callable(tfgan_bridge.losses_impl.wasserstein_hinge_generator_loss)
    assert callable(tfgan_bridge.losses.wasserstein_hinge_discriminator_loss)
    top = sys.modules["tensorflow_gan"]
    assert not hasattr(top, "estimator")  # TF-GAN's __init__ (which needs tf.estimator) never ran


def test_bridge_imports_in_a_fresh_interpreter():
    """In a new process, alone: no earlier import may be what makes it work."""
    code = ("from common import tfgan_bridge as b; "
            "print(float(b.eval.classifier_score_from_logits([[0.0, 0.0]])))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=root, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "1.0"


@pytest.mark.parametrize("n,dim,seed", [(500, 8, 0), (3000, 64, 1)])
def test_frechet_distance_matches_scipy(n, dim, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, dim)) @ rng.normal(size=(dim, dim))
    b = 0.5 + rng.normal(size=(n + 100, dim)) @ rng.normal(size=(dim, dim))
    got = tfgan_bridge.eval.frechet_classifier_distance_from_activations(
        tf.constant(a), tf.constant(b))
    assert got.dtype == tf.float64
    s_a, s_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    want = (np.sum((a.mean(0) - b.mean(0)) ** 2)
            + np.trace(s_a + s_b - 2 * scipy.linalg.sqrtm(s_a @ s_b).real))
    np.testing.assert_allclose(float(got), want, rtol=RTOL)


@pytest.mark.parametrize("classes,scale", [(10, 1.0), (10, 5.0), (1008, 3.0)])
def test_classifier_score_matches_numpy(classes, scale):
    logits = np.random.default_rng(classes).normal(scale=scale, size=(2000, classes))
    got = tfgan_bridge.eval.classifier_score_from_logits(tf.constant(logits))
    assert got.dtype == tf.float64
    p = scipy.special.softmax(logits, axis=1)
    kl = np.sum(p * (np.log(p) - np.log(p.mean(axis=0))), axis=1)
    np.testing.assert_allclose(float(got), np.exp(kl.mean()), rtol=RTOL)


def test_float32_inputs_are_computed_in_float64_internally():
    logits = np.random.default_rng(3).normal(scale=4.0, size=(1000, 10))
    score32 = tfgan_bridge.eval.classifier_score_from_logits(tf.constant(logits, tf.float32))
    score64 = tfgan_bridge.eval.classifier_score_from_logits(
        tf.constant(logits.astype(np.float32).astype(np.float64)))
    assert score32.dtype == tf.float32
    np.testing.assert_allclose(float(score32), float(score64), rtol=1e-7)
