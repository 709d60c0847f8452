"""A finished sweep end to end: model FLOPs (training + evaluation generation) / wall time.

    python -m benchmarks.sweep DIR [--peak GFLOPS] [--repeats 5] [--quick] [--out DIR]

DIR is a sweep's output directory (points/*/metrics.json). Training FLOPs are each point's
steps x its step FLOPs (`sngan.flops`); evaluation FLOPs count every time a point generated
its evaluation's samples (its history, the final score's replicates and any re-scorings). The
times are the ones the points recorded, from wherever and whenever the sweep ran; the peak is
--peak or measured now. Writes benchmarks/results/sweep.json.
"""
from __future__ import annotations

import argparse
import os

from benchmarks import harness, peak

MODULE = "benchmarks.sweep"


def sweep_totals(sweep_dir: str) -> dict:
    """Model (and executed) FLOPs and recorded wall times of every finished point."""
    from experiments import records
    from sngan import flops

    points = records.load_points(sweep_dir)
    if not points:
        raise SystemExit(f"{sweep_dir}: no finished points (points/*/metrics.json)")
    totals = dict(points=len(points), evaluations=0, train_flops=0, eval_flops=0,
                  executed_flops=0, train_s=0.0, eval_s=0.0, point_s=0.0, per_point=[])
    for p in points:
        cfg, rec, ev = p.config, p.record, p.config.eval
        scorings = len(p.history) + len(rec.replicates) + len(rec.evaluations)
        generation = dict(num_fake=ev.num_fake, batch_size=ev.batch_size, bn_mode=ev.bn_mode,
                          standing_batches=ev.standing_batches)
        train = rec.steps * flops.train_config_step_flops(cfg.model, cfg.train)
        totals["train_flops"] += train
        totals["eval_flops"] += scorings * flops.evaluation_generation_flops(cfg.model,
                                                                             **generation)
        totals["executed_flops"] += (
            rec.steps * flops.train_config_step_flops(cfg.model, cfg.train, executed=True)
            + scorings * flops.evaluation_generation_flops(cfg.model, **generation,
                                                           executed=True))
        totals["evaluations"] += scorings
        totals["train_s"] += rec.train_wall_time_s or 0.0
        totals["eval_s"] += rec.eval_wall_time_s or 0.0
        totals["point_s"] += rec.point_wall_time_s or 0.0
        if rec.train_wall_time_s and rec.steps:
            totals["per_point"].append(dict(point=os.path.basename(p.dir), steps=rec.steps,
                                            train_s=rec.train_wall_time_s, flops=train))
    return totals


def tables_for(s: dict, reference: dict) -> list[dict]:
    peak_cpu = reference["gflops_cpu"]

    def rate(flop, seconds):
        return flop / seconds / 1e9 if seconds else float("nan")

    scopes = [("training only (train_wall_time_s)", s["train_flops"], s["train_s"]),
              ("evaluation generation (eval_wall_time_s)", s["eval_flops"], s["eval_s"]),
              ("end to end (point_wall_time_s)", s["train_flops"] + s["eval_flops"],
               s["point_s"]),
              ("end to end, executed FLOPs", s["executed_flops"], s["point_s"])]
    whole = [[label, f"{fl / 1e12:.2f}", f"{sec:.0f}", f"{rate(fl, sec):.0f}",
              f"{rate(fl, sec) / peak_cpu:.2f}"] for label, fl, sec in scopes]
    points = [[p["point"], f"{p['train_s'] / p['steps'] * 1e3:.1f}",
               f"{rate(p['flops'], p['train_s']):.0f}",
               f"{rate(p['flops'], p['train_s']) / peak_cpu:.2f}"] for p in s["per_point"]]
    return [harness.table(["scope", "TFLOP", "wall time (s)", "GFLOP/s", "of conv peak"],
                          whole, title=f"{s['points']} points, {s['evaluations']} "
                                       "evaluations"),
            harness.table(["point", "ms/step (training)", "GFLOP/s (training)",
                           "of conv peak"], points, title="Per point")]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep_dir", help="a finished sweep's output directory")
    p.add_argument("--peak", type=float, default=None,
                   help="conv peak in GFLOP/s to divide by (default: measure it now)")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats of the peak")
    p.add_argument("--quick", action="store_true", help="a smaller peak problem")
    p.add_argument("--out", help="directory for sweep.json (default: benchmarks/results)")
    args = p.parse_args(argv)
    totals = sweep_totals(args.sweep_dir)
    reference = peak.reference_peak(args.peak, args.repeats, args.quick,
                                    harness.usable_cores())
    tables = tables_for(totals, reference)
    harness.publish("sweep", MODULE, argv, harness.machine(), reference, tables,
                    dict(totals, sweep_dir=harness.relative(args.sweep_dir)),
                    args.out)


if __name__ == "__main__":
    main()
