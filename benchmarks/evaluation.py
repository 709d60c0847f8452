"""The cost of one `fast`-protocol evaluation of fashion_mnist: bare vs with every metric.

    python -m benchmarks.evaluation [--repeats 5] [--quick] [--peak GFLOPS] [--out DIR]

Parts, through the trainer's own sampler and the evaluator's classifier: generating the
evaluation's samples; classifying them (generate + classify is the bare cost); TF-GAN's
IS/FID/KID on those activations (float64); and `Evaluator.score` whole (IS/FID/KID plus the
recognisability metrics: accuracy, intra-FID, precision/recall, density/coverage).
--quick scores 1,000 samples instead of the protocol's 5,000. Writes
benchmarks/results/evaluation.json.
"""
from __future__ import annotations

import argparse
import tempfile
import time

from benchmarks import harness, peak

MODULE = "benchmarks.evaluation"


def classifier_flops_per_image(classifier, resolution: int, channels: int) -> int:
    """TensorFlow's registered FLOPs of the classifier's conv/matmul ops on one image."""
    import tensorflow as tf
    from tensorflow.python.framework import ops as tf_ops

    graph = tf.function(lambda x: classifier.model(x, training=False)).get_concrete_function(
        tf.TensorSpec([1, resolution, resolution, channels])).graph
    kinds = ("Conv2D", "MatMul")
    return int(sum(tf_ops.get_stats_for_node_def(graph, op.node_def, "flops").value or 0
                   for op in graph.get_operations() if op.type in kinds))


def evaluation_costs(repeats: int, num_fake: int | None, cores: int) -> dict:
    from experiments import configs
    from experiments.evaluation import scoring
    from experiments.evaluation.evaluator import Evaluator
    from sngan import flops

    overrides = {"train.steps": 10 ** 6}
    if num_fake:
        overrides.update({"eval.protocol": "custom", "eval.num_fake": num_fake})
    cfg = configs.preset("fashion_mnist", overrides)
    ev = cfg.eval
    t = time.perf_counter()
    evaluator = Evaluator(cfg)
    setup = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as workdir:
        trainer = harness.make_trainer(cfg, workdir)
        replicator, generator = trainer.replicator, trainer.generator
        sampler = evaluator.sampler_for(generator, replicator)  # what score() samples with
        classifier = evaluator.classifier

        def generate():
            return [x for x, _ in sampler.batches(
                ev.num_fake, seed=ev.seed, bn_mode=ev.bn_mode, batch_size=ev.batch_size,
                standing_batches=ev.standing_batches)]

        def timed(fn, warmup=0):
            return harness.median_seconds(fn, repeats, warmup=warmup, cores=cores)

        images = generate()  # trace
        logits, features = scoring.classify(images, classifier, ev)
        evaluator.score(generator, replicator, step=0)
        parts = {"generate": timed(generate),
                 "classify": timed(lambda: scoring.classify(images, classifier, ev)),
                 "is_fid_kid": timed(lambda: scoring.score_activations(
                     logits, features, evaluator.real_features, ev), warmup=1),
                 "full": timed(lambda: evaluator.score(generator, replicator, step=0))}
    generation = dict(model_cfg=cfg.model, num_fake=ev.num_fake, batch_size=ev.batch_size,
                      bn_mode=ev.bn_mode, standing_batches=ev.standing_batches)
    per_image = classifier_flops_per_image(classifier, cfg.model.resolution,
                                           cfg.model.image_channels)
    return {"num_fake": ev.num_fake, "num_real": ev.num_real, "setup_s": setup,
            **{f"{k}_s_wall": v.wall for k, v in parts.items()},
            **{f"{k}_s_cpu": v.cpu for k, v in parts.items()},
            "generate_flops": flops.evaluation_generation_flops(**generation),
            "generate_executed_flops": flops.evaluation_generation_flops(**generation,
                                                                         executed=True),
            "classify_flops": per_image * ev.num_fake}


def rows(e: dict, reference: dict) -> list[list]:
    def t(part):
        return harness.Timing((e[f"{part}_s_wall"], e[f"{part}_s_cpu"]))

    gen, cls, ifk, full = t("generate"), t("classify"), t("is_fid_kid"), t("full")
    bare = harness.Timing((gen.wall + cls.wall, gen.cpu + cls.cpu))
    with_ifk = harness.Timing((bare.wall + ifk.wall, bare.cpu + ifk.cpu))
    g, c = e["generate_flops"] / 1e9, e["classify_flops"] / 1e9
    peak_cpu = reference["gflops_cpu"]
    out = []
    for label, timing, gflop in (
            (f"generate {e['num_fake']} samples (trainer's sampler)", gen, g),
            ("classify them", cls, c),
            ("bare cost: generate + classify", bare, g + c),
            ("bare + IS/FID/KID (TF-GAN, float64; timed alone)", with_ifk, g + c),
            ("full `Evaluator.score` (every metric)", full, g + c)):
        out.append([label, f"{timing.wall:.2f}", f"{timing.cpu:.2f}", f"{gflop:.1f}",
                    f"{gflop / timing.cpu:.0f}", f"{gflop / timing.cpu / peak_cpu:.2f}"])
    out.append(["(bare + IS/FID/KID) / bare", f"{with_ifk.wall / bare.wall:.2f}x",
                f"{with_ifk.cpu / bare.cpu:.2f}x", "", "", ""])
    out.append(["full / bare", f"{full.wall / bare.wall:.2f}x", f"{full.cpu / bare.cpu:.2f}x",
                "", "", ""])
    run = e["generate_executed_flops"] / 1e9
    out.append(["generation, executed FLOPs", "", "", f"{run:.1f}", f"{run / gen.cpu:.0f}",
                f"{run / gen.cpu / peak_cpu:.2f}"])
    out.append(["one-off `Evaluator` set-up (classifier + cached real features)",
                f"{e['setup_s']:.2f}", "", "", "", ""])
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5, help="timed repeats (median reported)")
    p.add_argument("--quick", action="store_true",
                   help="1,000 samples and a smaller peak problem (a smoke run)")
    p.add_argument("--peak", type=float, default=None,
                   help="conv peak in GFLOP/s to divide by (default: measure it now)")
    p.add_argument("--out", help="directory for evaluation.json (default: benchmarks/results)")
    args = p.parse_args(argv)
    info = harness.machine()
    cores = harness.usable_cores()
    reference = peak.reference_peak(args.peak, args.repeats, args.quick, cores)
    costs = evaluation_costs(args.repeats, 1000 if args.quick else None, cores)
    tables = [harness.table(
        ["part", "s (wall)", "s (CPU time / cores)", "GFLOP", "GFLOP/s (CPU time)",
         "of conv peak (CPU time)"], rows(costs, reference),
        title=f"One evaluation of fashion_mnist ({costs['num_fake']:,} generated vs "
              f"{costs['num_real']:,} real)")]
    harness.publish("evaluation", MODULE, argv, info, reference, tables, costs,
                    args.out)


if __name__ == "__main__":
    main()
