"""Score a generator with the run's protocol: IS, FID and KID against cached real features."""
from __future__ import annotations

import time

from experiments import classifiers, reference_stats, scoring
from experiments.config import RunConfig


class Evaluator:
    """Holds the classifier and the real-data features, which are costly; scores many times."""

    def __init__(self, cfg: RunConfig, cache_dir: str | None = None, log=print):
        self.cfg = cfg
        self.log = log
        self.classifier = classifiers.load_classifier(cfg.eval)
        self.real_features = reference_stats.reference_activations(
            cfg.data, cfg.eval, self.classifier, cache_dir)

    def score(self, sampler, replicas: int, step: int | None = None) -> dict:
        ev = self.cfg.eval
        t0 = time.perf_counter()
        fakes = (images for images, _ in sampler.batches(
            ev.num_fake, seed=ev.seed, bn_mode=ev.bn_mode, batch_size=ev.batch_size,
            standing_batches=ev.standing_batches))
        scores = scoring.score_images(fakes, self.classifier, self.real_features, ev)
        wall = time.perf_counter() - t0
        scores["protocol"] = scoring.protocol_record(
            ev, self.classifier, ev.num_fake, len(self.real_features),
            dict(replicas=replicas, step=step, eval_wall_time_s=round(wall, 3),
                 dataset=self.cfg.data.name, resolution=self.cfg.data.resolution))
        if step is not None:
            scores["step"] = step
        self.log(f"eval step {step}: IS {scores['is_mean']:.3f} +- {scores['is_std']:.3f} "
                 f"FID {scores['fid']:.3f} KID {scores['kid_mean']:.4f} ({wall:.1f} s)")
        return scores

