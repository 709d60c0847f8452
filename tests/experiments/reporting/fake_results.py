"""Synthetic sweep points (what `run_point` writes), for report and notebook tests."""
import os

import numpy as np

from common import files
from experiments import configs, records
from experiments.records import PointRecord, Protocol, Scores

PROTOCOL = Protocol(protocol="tiny", classifier="fashion_mnist_classifier",
                    classifier_version="abc", classifier_resize="none",
                    classifier_features="features", n_fake=500, n_real=1000,
                    reference_split="test", is_splits=5, kid_subsets=5, bn_mode="batch", seed=1,
                    eval_batch_size=500, metric_implementation="tensorflow-gan (float64)")


def make_point(batch, seed, is_mean, fid, status="done", accuracy=None, replicates=(),
               steps=100, budget=None, evals=2, curve=None, root="") -> records.Point:
    """A point in memory. `replicates`: IS values of extra evaluation seeds of the final
    checkpoint. The curve has `evals` evaluations, evenly spaced, rising linearly to `is_mean`
    (and `accuracy`) at `steps`, or the IS values `curve` (its last is the final IS); `budget`
    is the record's sweep_budget ('equal_images' points get their own directory name, as
    control points beside a sweep's)."""
    cfg = configs.preset("fashion_mnist", {"train.global_batch_size": batch,
                                           "train.seed": seed, "train.steps": steps})
    name = f"bs{batch:04d}_seed{seed}" + ("_equal_images" if budget == "equal_images" else "")
    evals = len(curve) if curve is not None else evals
    at = [steps * (i + 1) // evals for i in range(evals)]
    curve = curve if curve is not None else [is_mean * s / steps for s in at]
    history = [Scores(step=s, images_seen=s * batch * 2, is_mean=v,
                      fid=fid * steps / s, is_std=0.1, kid_mean=0.01, kid_std=0.001,
                      n_fake=500, n_real=1000, protocol=PROTOCOL.replace(step=s),
                      accuracy=None if accuracy is None else accuracy * s / steps,
                      precision=0.5, recall=0.4)
               for s, v in zip(at, curve)]
    extra = [history[-1].replace(is_mean=v, protocol=PROTOCOL.replace(step=steps, seed=2 + i))
             for i, v in enumerate(replicates)]
    record = PointRecord(status=status, global_batch_size=batch, seed=seed, replicas=1,
                         bn_batch_per_replica=batch, bn_cross_replica=True, steps=steps,
                         images_seen=steps * batch * 2, train_wall_time_s=60.0,
                         eval_wall_time_s=6.0, final=history[-1] if status == "done" else None,
                         diverged_at=None if status == "done" else steps, replicates=extra,
                         point=name, sweep_budget=budget)
    return records.Point(os.path.join(root, "points", name), cfg, record, history)


def fake_point(root, batch, seed, is_mean, fid, **kwargs):
    """`make_point`, written as `run_point` writes it (with samples.npz, which the report reads;
    without the class-grid figure, which nothing reads and which took most of a test's time)."""
    point = make_point(batch, seed, is_mean, fid, root=root, **kwargs)
    run_dir = point.dir
    records.write_config(run_dir, point.config)
    records.write_history(run_dir, point.history)
    if point.record.status == "done":
        with files.atomic_writer(os.path.join(run_dir, "samples", "samples.npz"), "wb") as f:
            np.savez(f, comparison=np.full((8, 32, 32, 1), batch % 255, np.uint8),
                     class_grid=np.zeros((10, 8, 32, 32, 1), np.uint8))
    records.write_record(run_dir, point.record)


def fake_sweep(root):
    for batch, is_mean, fid in ((16, 3.0, 80.0), (64, 4.0, 40.0), (512, 6.0, 20.0)):
        fake_point(root, batch, 0, is_mean, fid)


def noise_scale_run(batch: int, steps: int, noise_scale: dict, series=None, **extra) -> dict:
    """A saved `noise-scale --save` run (sweep_files.NoiseScaleRun) with these numbers."""
    return dict(command=f"python -m experiments noise-scale --batch-size {batch}",
                preset="fashion_mnist", global_batch_size=batch, steps=steps, seed=0, n_dis=2,
                replicas=1, replicator="default", schedule_steps=1000, lr_decay_start=None,
                diverged_at=None, train_wall_time_s=1.0, noise_scale=noise_scale,
                series=series or {p: dict(steps=[], b_simple=[]) for p in "dg"},
                bn_cross_replica=True) | extra


def study_of(points, root="", comparison=None, arms=(), bootstrap=0):
    """A Study (what every section reads) of in-memory points."""
    from experiments.config import StudyComparison
    from experiments.reporting.study import Study
    return Study(str(root), os.path.join(str(root), "report"), tuple(points),
                 comparison or StudyComparison(), tuple(arms), bootstrap)
