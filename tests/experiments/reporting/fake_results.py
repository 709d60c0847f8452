"""Synthetic sweep points (what `run_point` writes), for report and notebook tests."""
import os

import numpy as np

from experiments import config as c
from experiments import figures, runfiles


def fake_point(root, batch, seed, is_mean, fid, status="done"):
    cfg = c.preset("fashion_mnist").to_dict()
    run_dir = os.path.join(root, "points", f"bs{batch:04d}_seed{seed}")
    history = [dict(step=s, images_seen=s * batch * 2, is_mean=is_mean * s / 100,
                    fid=fid * 100 / s, is_std=0.1, kid_mean=0.01, kid_std=0.001)
               for s in (50, 100)]
    scores = dict(history[-1], protocol=dict(classifier="fashion_mnist_classifier",
                                             classifier_version="abc", n_fake=500, n_real=1000,
                                             reference_split="test", is_splits=5,
                                             resize_method="none", bn_mode="batch", seed=1))
    rec = dict(status=status, config=cfg, global_batch_size=batch, seed=seed, replicas=1,
               steps=100, images_seen=100 * batch * 2, train_wall_time_s=60.0,
               eval_wall_time_s=6.0, history=history)
    if status == "done":
        rec["scores"] = scores
        os.makedirs(os.path.join(run_dir, "samples"))
        np.savez(os.path.join(run_dir, "samples", "samples.npz"),
                 comparison=np.full((8, 32, 32, 1), batch % 255, np.uint8),
                 class_grid=np.zeros((10, 8, 32, 32, 1), np.uint8))
        figures.save_class_grid(np.zeros((10, 2, 32, 32, 1), np.float32),
                                os.path.join(run_dir, "samples", "class_grid.png"))
    runfiles.atomic_write_json(os.path.join(run_dir, runfiles.METRICS), rec)


def fake_sweep(root):
    for batch, is_mean, fid in ((16, 3.0, 80.0), (64, 4.0, 40.0), (512, 6.0, 20.0)):
        fake_point(root, batch, 0, is_mean, fid)
