"""Score finished points with CAS and the memorisation check, cached in their records.

`python -m experiments robustness --run POINT [POINT ...]` (see cli.py) loads the real side
once (`real_row.RealSide`: training and test images, the extractor's features, the test
images' nearest training images), then per point skips what its `metrics.json` already holds
(`PointRecord.cas[CasRecipe.key]`, `PointRecord.memorisation[MemorisationScore.key]`), scores
the rest from the final generator and writes the record after each point, so an interrupted
run resumes where it stopped. The memorisation check also draws its closest pairs into
POINT/samples/closest_pairs_SPACE.png|pdf. With another extractor than the point's
(`--classifier`), the protocol's scores under it (IS, FID, KID, ...) are written too, into
`evaluations['protocol/bn_mode/EXTRACTOR']`: the second opinion on every number.
"""
from __future__ import annotations

import logging
import os

import numpy as np

from experiments import records
from experiments.class_names import class_names
from experiments.evaluation import cas, memorisation
from experiments.records import CasRecipe, MemorisationScore

log = logging.getLogger(__name__)

N_GENERATED = 5_000  # generated images checked for memorisation (the `fast` protocol's count)
CLOSEST = 16  # pairs kept in the record and drawn


def memorisation_keys(cfg, classifier, n_generated: int = N_GENERATED,
                      percentile: float = memorisation.PERCENTILE) -> list[str]:
    ev = cfg.eval
    return [MemorisationScore.key_for(space, version, n_generated, percentile, ev.seed,
                                      ev.bn_mode)
            for space, version in ((memorisation.PIXELS, None),
                                   (classifier.name, classifier.version))]


def extractor_config(cfg, classifier):
    """The point's config scored by `classifier`; None when that is the point's own extractor
    (its scores are in the record already)."""
    if classifier.name == cfg.eval.classifier:
        return None
    return cfg.with_overrides({"eval.classifier": classifier.name})


def missing(record, cfg, classifier, want_cas: bool, want_memorisation: bool,
            recipe: CasRecipe = cas.RECIPE, n_generated: int = N_GENERATED) -> dict:
    """{'scores', 'cas', 'memorisation': bool}: what the point's record does not hold yet
    ('scores': the protocol's metrics under another extractor than the point's)."""
    from experiments.trained_generator import evaluation_key
    other = extractor_config(cfg, classifier)
    return dict(scores=other is not None and evaluation_key(cfg, other) not in record.evaluations,
                cas=want_cas and recipe.key not in record.cas,
                memorisation=want_memorisation and not all(
                    k in record.memorisation
                    for k in memorisation_keys(cfg, classifier, n_generated)))


def score_point(run_dir: str, side, replicator, want_cas: bool = True,
                want_memorisation: bool = True, recipe: CasRecipe = cas.RECIPE,
                n_generated: int = N_GENERATED) -> list[str]:
    """Score what the point lacks; returns the keys written ([] when all were cached)."""
    from experiments import trained_generator
    from experiments.running import run_dir as run_dir_lib

    cfg = run_dir_lib.require_config(run_dir)
    record = run_dir_lib.require_record(run_dir)
    todo = missing(record, cfg, side.classifier, want_cas, want_memorisation, recipe,
                   n_generated)
    if not any(todo.values()):
        log.info("%s: CAS and memorisation already in its record; skipped", run_dir)
        return []
    loaded = trained_generator.load_generator(run_dir, replicator)
    ev, written = cfg.eval, []
    if todo["scores"]:
        written.append(trained_generator.rescore(
            run_dir, extractor_config(cfg, side.classifier), replicator, loaded))
        record = run_dir_lib.require_record(run_dir)
    if todo["cas"]:
        score = cas.score_generator(loaded.sampler, side.test, recipe, ev.bn_mode,
                                    step=loaded.step, batch_size=ev.batch_size,
                                    standing_batches=ev.standing_batches)
        record = record.replace(cas={**record.cas, recipe.key: score})
        records.write_record(run_dir, record)
        written.append(recipe.key)
        log.info("%s: CAS %.4f (%.0f s)", run_dir, score.accuracy, score.wall_time_s)
    if todo["memorisation"]:
        images, labels = [], []
        for x, y in loaded.sampler.batches(n_generated, seed=ev.seed, bn_mode=ev.bn_mode,
                                           batch_size=ev.batch_size,
                                           standing_batches=ev.standing_batches):
            images.append(np.asarray(x, np.float32))
            labels.append(np.asarray(y))
        images, labels = np.concatenate(images), np.concatenate(labels)
        out = memorisation.check(images, side.train[0], None, side.classifier,
                                 train_features=side.train_features,
                                 test_neighbours=side.test_neighbours, labels=labels,
                                 seed=ev.seed, bn_mode=ev.bn_mode, k=CLOSEST,
                                 step=loaded.step)
        names = class_names(cfg.data.name, max(cfg.model.num_classes, 1))
        for space, (score, _) in out.items():
            memorisation.closest_pairs_figure(
                images, side.train[0], score.closest,
                os.path.join(run_dir, records.SAMPLES, f"closest_pairs_{space}.png"),
                title=f"batch {cfg.train.global_batch_size}, seed {cfg.train.seed}: closest "
                      f"training images ({space}); {score.fraction_closer:.1%} of "
                      f"{score.n_generated} closer than the test images' "
                      f"{score.percentile:g}th percentile",
                class_names=names)
            log.info("%s: memorisation (%s) %.4f closer than %.3f (%.0f s)", run_dir, space,
                     score.fraction_closer, score.threshold, score.wall_time_s)
        record = record.replace(memorisation={**record.memorisation,
                                              **{s.key: s for s, _ in out.values()}})
        records.write_record(run_dir, record)
        written += [s.key for s, _ in out.values()]
    return written
