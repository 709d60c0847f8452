"""Score generators with the run's protocol: IS, FID and KID against cached real features.

An Evaluator lives for a whole sweep, so its fixed costs are paid once: loading the classifier,
the real-data reference statistics, and tracing the sampling function. It samples from its own
twin of the generator, into which each point's weights are copied before scoring, so the traced
sampling graph is reused by every point (all points share the architecture).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from common import faults
from experiments.config import RunConfig
from experiments.evaluation import classifiers, fidelity_diversity, reference_stats, scoring
from experiments.records import Scores
from sngan import models
from sngan.sampling import Sampler

log = logging.getLogger(__name__)


class Evaluator:
    """Holds the classifier, the real-data features and a sampler; scores many generators."""

    def __init__(self, cfg: RunConfig, cache_dir: str | None = None):
        self.cfg = cfg
        self.classifier = classifiers.load_classifier(cfg.eval)
        self.reference = reference_stats.reference_statistics(
            cfg.data, cfg.eval, self.classifier, cache_dir)
        self.real_features = self.reference.features
        self.manifold = fidelity_diversity.RealManifold(self.real_features)
        self._sampler: Sampler | None = None

    def sampler_for(self, generator, replicator) -> Sampler:
        """A sampler whose generator holds `generator`'s current weights (BN statistics too)."""
        sampler = self._sampler
        if sampler is None or sampler.replicator is not replicator:
            with replicator.context():
                twin = models.build_generator(self.cfg.model)
            sampler = Sampler(twin, replicator, self.cfg.model.z_dim, self.cfg.model.num_classes)
            self._sampler = sampler
        for src, dst in zip(generator.weights, sampler.generator.weights, strict=True):
            dst.assign(src)
        return sampler

    def score(self, generator, replicator, step: int | None = None,
              images_seen: int | None = None, eval_seed: int | None = None) -> Scores:
        """Scores under the run's protocol; `eval_seed` replaces its evaluation seed (latents
        and KID subsets), to measure evaluation noise on the same checkpoint."""
        faults.reached("eval")
        ev = self.cfg.eval
        if eval_seed is not None:
            ev = dataclasses.replace(ev, seed=eval_seed)
        t0 = time.perf_counter()
        sampler = self.sampler_for(generator, replicator)
        labels = []

        def fakes():
            for images, y in sampler.batches(ev.num_fake, seed=ev.seed, bn_mode=ev.bn_mode,
                                             batch_size=ev.batch_size,
                                             standing_batches=ev.standing_batches):
                labels.append(y)
                yield images

        logits, features = scoring.classify(fakes(), self.classifier, ev)
        t_classify = time.perf_counter() - t0
        # IS/FID/KID and the recognisability metrics are independent and each leaves a core
        # idle part of the time, so they run side by side (the per-class FIDs on threads too)
        with ThreadPoolExecutor(1) as pool:
            raw = pool.submit(scoring.score_activations, logits, features, self.real_features,
                              ev)
            recognisable = scoring.recognisability(
                logits, features, np.concatenate(labels)[:ev.num_fake], self.reference,
                self.manifold, self.classifier, self.cfg.data.name, self.cfg.model.num_classes)
            raw = {**raw.result(), **recognisable}
        wall = time.perf_counter() - t0
        raw.update(classify_time_s=round(t_classify, 3),
                   metrics_time_s=round(wall - t_classify, 3))
        protocol = scoring.protocol_record(
            ev, self.classifier, ev.num_fake, len(self.real_features),
            replicas=replicator.num_replicas, step=step, eval_wall_time_s=round(wall, 3),
            dataset=self.cfg.data.name, resolution=self.cfg.data.resolution)
        scores = Scores(**raw, protocol=protocol, step=step, images_seen=images_seen)
        accuracy = "" if scores.accuracy is None else f" acc {scores.accuracy:.3f}"
        log.info("eval step %s: IS %.3f +- %.3f FID %.3f KID %.4f%s P %.2f R %.2f (%.1f s)",
                 step, scores.is_mean, scores.is_std, scores.fid, scores.kid_mean, accuracy,
                 scores.precision, scores.recall, wall)
        return scores
