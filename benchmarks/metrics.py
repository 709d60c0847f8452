"""How long scoring takes: classifiers on 10k images, FID/KID on 10k x 10k activations.

    python -m benchmarks.metrics [--repeats 3] [--inception-images 500] [--skip-inception]
                                 [--out DIR]

* shipped Fashion-MNIST classifier: 10k 32x32 images -> logits + 128-d features, then the
  full `score_images` (IS, FID, KID) against 10k real features.
* Inception back end: no network here, so TF-GAN's module is stood in for by Keras' Inception-v3
  architecture with random weights (same layers and FLOPs: 1008 logits, 2048-d pool_3), saved
  as a SavedModel and loaded through `experiments.evaluation.classifiers.inception` (resize to
  299 and all). Timed on --inception-images and extrapolated to 10k.
* FID on 10k x 10k activations (--fid-samples; 128-d and 2048-d): TF-GAN (SVD square roots,
  float64) vs the common scipy reference (`scipy.linalg.sqrtm` of the covariance product). Also KID.

Medians over --repeats runs and the ratios; writes benchmarks/results/metrics.json.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import scipy.linalg
import tensorflow as tf

from benchmarks import harness
from experiments.config import EvalConfig
from experiments.data import fashion_mnist_images
from experiments.evaluation import metrics, scoring
from experiments.evaluation.classifiers import fashion_mnist, inception

MODULE = "benchmarks.metrics"


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


def bench_shipped(repeats: int) -> dict:
    clf = fashion_mnist.load()
    test, _ = fashion_mnist_images("test")
    train, _ = fashion_mnist_images("train")
    clf.activations(test[:500])  # trace once
    t_act, (_, real_features) = median_time(lambda: clf.activations(test), repeats)
    cfg = EvalConfig(protocol="custom", num_fake=10_000, num_real=10_000)
    t_score, scores = median_time(
        lambda: scoring.score_images(train[:10_000], clf, real_features, cfg), repeats)
    return {"activations_10k_s": t_act, "score_images_10k_s": t_score,
            "is_mean": scores["is_mean"], "fid_train_vs_test": scores["fid"],
            "kid_mean": scores["kid_mean"]}


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


def bench_inception(n_images: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "inception_v3")
        save_inception_architecture(path)
        clf = inception.load(path)
    images = np.random.default_rng(0).uniform(-1, 1, (n_images, 32, 32, 1)).astype(np.float32)
    clf.activations(images[:50], batch_size=50)  # trace once
    t, (logits, features) = median_time(lambda: clf.activations(images, batch_size=100),
                                        max(1, repeats // 3))
    return {"images": n_images, "seconds": t, "features": int(features.shape[1]),
            "logits": int(logits.shape[1])}


def bench_fid(dim: int, repeats: int, n: int) -> dict:
    rng = np.random.default_rng(dim)
    mix = rng.normal(size=(dim, dim)) / np.sqrt(dim)
    a = np.maximum(rng.normal(size=(n, dim)) @ mix, 0)  # ReLU-like features
    b = np.maximum(rng.normal(loc=0.1, size=(n, dim)) @ mix, 0)
    t_tfgan, fid = median_time(lambda: metrics.frechet_distance(a, b), repeats)
    t_scipy, fid_ref = median_time(lambda: scipy_fid(a, b), repeats)
    t_kid, _ = median_time(lambda: metrics.kernel_distance(a, b), repeats)
    return {"dim": dim, "samples": n, "tfgan_fid_s": t_tfgan, "scipy_fid_s": t_scipy,
            "kid_s": t_kid, "fid": fid, "fid_scipy": fid_ref,
            "relative_difference": abs(fid - fid_ref) / abs(fid_ref)}


def tables_for(data: dict) -> list[dict]:
    shipped = data["shipped"]
    rows = [["shipped classifier: activations of 10k images",
             f"{shipped['activations_10k_s']:.2f} s "
             f"({10_000 / shipped['activations_10k_s']:.0f} img/s)"],
            ["`score_images`, 10k generated vs 10k real (IS + FID + KID)",
             f"{shipped['score_images_10k_s']:.2f} s"]]
    for f in data["fid"]:
        rows.append([f"FID {f['samples']:,} x {f['samples']:,}, {f['dim']}-d: TF-GAN vs "
                     "scipy `sqrtm`",
                     f"{f['tfgan_fid_s']:.2f} s vs {f['scipy_fid_s']:.2f} s (values agree to "
                     f"{f['relative_difference']:.0e} relative)"])
        rows.append([f"KID, 10 subsets, {f['dim']}-d", f"{f['kid_s']:.2f} s"])
    if data.get("inception"):
        i = data["inception"]
        rows.append([f"Inception-v3 stand-in (random weights, 299x299), {i['images']} images",
                     f"{i['images'] / i['seconds']:.1f} img/s, so 10k images take "
                     f"{10_000 * i['seconds'] / i['images'] / 60:.1f} min"])
    return [harness.table(["what", "time"], rows)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--inception-images", type=int, default=500)
    parser.add_argument("--skip-inception", action="store_true")
    parser.add_argument("--fid-samples", type=int, default=10_000,
                        help="activations per side of the FID/KID timings")
    parser.add_argument("--out", help="directory for metrics.json (default: benchmarks/results)")
    args = parser.parse_args(argv)
    info = harness.machine()
    data = {"shipped": bench_shipped(args.repeats),
            "fid": [bench_fid(dim, args.repeats, args.fid_samples) for dim in (128, 2048)],
            "inception": (None if args.skip_inception
                          else bench_inception(args.inception_images, args.repeats))}
    tables = tables_for(data)
    harness.publish("metrics", MODULE, argv, info, None, tables, data, args.out)


if __name__ == "__main__":
    main()
