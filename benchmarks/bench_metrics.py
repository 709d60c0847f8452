"""How long scoring takes: classifiers on 10k images, FID/KID on 10k x 10k activations.

    python benchmarks/bench_metrics.py [--repeats 3] [--inception-images 500] [--skip-inception]

* shipped Fashion-MNIST classifier: 10k 32x32 images -> logits + 128-d features, then the
  full `score_images` (IS, FID, KID) against 10k real features.
* Inception back end: no network here, so TF-GAN's module is stood in for by Keras' Inception-v3
  architecture with random weights (same layers and FLOPs: 1008 logits, 2048-d pool_3), saved
  as a SavedModel and loaded through `experiments.evaluation.classifiers.inception` (resize to
  299 and all). Timed on --inception-images and extrapolated to 10k.
* FID on 10k x 10k activations (128-d and 2048-d): TF-GAN (SVD square roots, float64) vs the
  common scipy reference (`scipy.linalg.sqrtm` of the covariance product). Also KID.

Prints medians over --repeats runs and the ratios.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import tensorflow as tf  # noqa: E402

from experiments.config import EvalConfig  # noqa: E402
from experiments.data import fashion_mnist_images  # noqa: E402
from experiments.evaluation import metrics, scoring  # noqa: E402
from experiments.evaluation.classifiers import fashion_mnist, inception  # noqa: E402


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def scipy_fid(a, b) -> float:
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a, s_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = scipy.linalg.sqrtm(s_a @ s_b).real
    return float(np.sum((mu_a - mu_b) ** 2) + np.trace(s_a + s_b - 2 * covmean))


def bench_shipped(repeats: int) -> None:
    clf = fashion_mnist.load()
    test, _ = fashion_mnist_images("test")
    train, _ = fashion_mnist_images("train")
    clf.activations(test[:500])  # trace once
    t_act, (_, real_features) = median_time(lambda: clf.activations(test), repeats)
    cfg = EvalConfig(protocol="custom", num_fake=10_000, num_real=10_000)
    t_score, scores = median_time(
        lambda: scoring.score_images(train[:10_000], clf, real_features, cfg), repeats)
    print(f"shipped classifier: activations of 10k images {t_act:.2f} s "
          f"({10_000 / t_act:.0f} img/s); score_images 10k fake vs 10k real (IS+FID+KID) "
          f"{t_score:.2f} s [IS {scores['is_mean']:.3f}, FID(train 10k, test) "
          f"{scores['fid']:.3f}, KID {scores['kid_mean']:.5f}]")


def save_inception_architecture(path: str) -> None:
    import keras

    net = keras.applications.InceptionV3(weights=None, include_top=True, classes=1008,
                                         classifier_activation=None)
    pool = net.get_layer("avg_pool").output
    model = keras.Model(net.input, {"logits": net.output, "pool_3": pool})

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([None, 299, 299, 3], tf.float32)])
        def __call__(self, images):
            return self.model(images, training=False)

    tf.saved_model.save(Module(), path)


def bench_inception(n_images: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "inception_v3")
        save_inception_architecture(path)
        clf = inception.load(path)
    images = np.random.default_rng(0).uniform(-1, 1, (n_images, 32, 32, 1)).astype(np.float32)
    clf.activations(images[:50], batch_size=50)  # trace once
    t, (logits, features) = median_time(lambda: clf.activations(images, batch_size=100),
                                        max(1, repeats // 3))
    print(f"inception (Keras Inception-v3 architecture, random weights, 299x299): "
          f"{n_images} images in {t:.1f} s ({n_images / t:.1f} img/s) -> 10k images "
          f"~{10_000 * t / n_images / 60:.1f} min; features {features.shape[1]}-d, "
          f"logits {logits.shape[1]}")


def bench_fid(dim: int, repeats: int) -> None:
    rng = np.random.default_rng(dim)
    mix = rng.normal(size=(dim, dim)) / np.sqrt(dim)
    a = np.maximum(rng.normal(size=(10_000, dim)) @ mix, 0)  # ReLU-like features
    b = np.maximum(rng.normal(loc=0.1, size=(10_000, dim)) @ mix, 0)
    t_tfgan, fid = median_time(lambda: metrics.frechet_distance(a, b), repeats)
    t_scipy, fid_ref = median_time(lambda: scipy_fid(a, b), repeats)
    t_kid, _ = median_time(lambda: metrics.kernel_distance(a, b), repeats)
    print(f"FID 10k x 10k, {dim}-d: TF-GAN {t_tfgan:.2f} s, scipy sqrtm {t_scipy:.2f} s "
          f"(TF-GAN/scipy time {t_tfgan / t_scipy:.2f}x); values {fid:.6f} vs {fid_ref:.6f} "
          f"(rel. diff {abs(fid - fid_ref) / abs(fid_ref):.1e}); KID (10 blocks) {t_kid:.2f} s")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--inception-images", type=int, default=500)
    parser.add_argument("--skip-inception", action="store_true")
    args = parser.parse_args(argv)
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPU(s), "
          f"{len(tf.config.list_physical_devices('GPU'))} GPU(s); medians of {args.repeats}")
    bench_shipped(args.repeats)
    for dim in (128, 2048):
        bench_fid(dim, args.repeats)
    if not args.skip_inception:
        bench_inception(args.inception_images, args.repeats)


if __name__ == "__main__":
    main()
