"""Probe arms: time-to-target arms of fewer batch sizes than a fit needs (e.g. batch 512 at
another lr), set against the headline arm at the same batch: steps to each of its IS targets,
and any divergence (a result, never hidden)."""
from __future__ import annotations

import os

from experiments.records import Point
from experiments.reporting.lib import markdown, mccandlish
from experiments.reporting.lib.crossings import crossings, curve_of
from experiments.reporting.lib.metrics import describe
from experiments.reporting.sections import time_to_target as ttt

KEY, ORDER = "probes", 60
POINT = "- {point}: batch {batch}, G lr {g_lr:.3g}, D lr {d_lr:.3g}, {status}{at}, final IS {is_}."


def probe(points: list[Point], main: dict, main_points: list[Point]) -> dict:
    out = {"points": [], "targets": []}
    for p in points:
        t = p.config.train
        out["points"].append(dict(point=os.path.basename(p.dir), batch=t.global_batch_size,
                                  seed=t.seed, g_lr=t.g_lr, d_lr=t.d_lr,
                                  status=p.record.status, diverged_at=p.record.diverged_at,
                                  final_is=p.record.final.is_mean if p.record.final else None))
    curves = [curve_of(p) for p in points if p.history]
    batches = sorted({c.batch for c in curves})
    twins = [curve_of(p) for p in main_points if p.record.global_batch_size in batches]
    for r in main["metrics"]["is_mean"] if curves else []:
        mine = crossings(curves, "is_mean", r["target"])
        theirs = crossings(twins, "is_mean", r["target"])
        for b in batches:
            cs, ts = mine.get(b, []), theirs.get(b, [])
            if cs and ts:
                s = mccandlish.speedup({1: ts, 2: cs}, 1, 2, bootstrap=0)
                out["targets"].append(dict(
                    target=r["target"], batch=b, probe=[c.step for c in cs],
                    probe_censored=[c.censored for c in cs], main=[c.step for c in ts],
                    main_censored=[c.censored for c in ts], steps_saved=s.steps_saved,
                    bound=s.bound))
    return out


def compute(study, earlier: dict) -> dict | None:
    main, fitted = ttt.headline_arm(study), earlier.get(ttt.KEY) or {}
    arms = [a for a in study.time_to_target_arms if a not in fitted and study.arm(a)
            and a not in study.comparison.lr_search_arms]
    if main not in fitted or not arms:
        return None
    main_points = ttt.full_arms(study)[main]
    return {arm: dict(probe(study.arm(arm), fitted[main], main_points), against=main)
            for arm in arms}


def _steps(steps, censored) -> str:
    return f"{'> ' * any(censored)}{describe(steps).geomean:.0f}"


def render(result: dict, study) -> str:
    lines = []
    for arm, res in result.items():
        main = res["against"]
        lines += [f"## Probe arm '{arm}' against '{main}'", ""]
        lines += [POINT.format(**p, at=f" at step {p['diverged_at']}" if p["diverged_at"] else "",
                               is_=ttt.fmt(p["final_is"], ".2f")) for p in res["points"]]
        rows = [[f"{t['target']:.1f}", str(t["batch"]), _steps(t["main"], t["main_censored"]),
                 _steps(t["probe"], t["probe_censored"]),
                 f"{t['bound']}{ttt.fmt(t['steps_saved'], '.2f')}x"] for t in res["targets"]]
        lines += ["", f"Steps to each IS target at the same batch (geometric mean over seeds; "
                  f"'>' censored) and the steps saved by '{arm}':", "",
                  markdown.table(["IS target", "batch", main, arm, "saved"], rows), ""]
    return "\n".join(lines)
