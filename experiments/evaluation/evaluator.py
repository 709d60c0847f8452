"""Score a generator with the run's protocol: IS, FID and KID against cached real features."""
from __future__ import annotations

import logging
import time

from experiments.config import RunConfig
from experiments.evaluation import classifiers, reference_stats, scoring
from experiments.records import Scores

log = logging.getLogger(__name__)


class Evaluator:
    """Holds the classifier and the real-data features, which are costly; scores many times."""

    def __init__(self, cfg: RunConfig, cache_dir: str | None = None):
        self.cfg = cfg
        self.classifier = classifiers.load_classifier(cfg.eval)
        self.real_features = reference_stats.reference_activations(
            cfg.data, cfg.eval, self.classifier, cache_dir)

    def score(self, sampler, replicas: int, step: int | None = None,
              images_seen: int | None = None) -> Scores:
        ev = self.cfg.eval
        t0 = time.perf_counter()
        fakes = (images for images, _ in sampler.batches(
            ev.num_fake, seed=ev.seed, bn_mode=ev.bn_mode, batch_size=ev.batch_size,
            standing_batches=ev.standing_batches))
        raw = scoring.score_images(fakes, self.classifier, self.real_features, ev)
        wall = time.perf_counter() - t0
        protocol = scoring.protocol_record(
            ev, self.classifier, ev.num_fake, len(self.real_features), replicas=replicas,
            step=step, eval_wall_time_s=round(wall, 3), dataset=self.cfg.data.name,
            resolution=self.cfg.data.resolution)
        scores = Scores(**raw, protocol=protocol, step=step, images_seen=images_seen)
        log.info("eval step %s: IS %.3f +- %.3f FID %.3f KID %.4f (%.1f s)", step,
                 scores.is_mean, scores.is_std, scores.fid, scores.kid_mean, wall)
        return scores
