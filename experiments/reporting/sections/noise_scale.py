"""The report's gradient-noise-scale section: B_simple for D and G per batch size, the critical
batch it predicts, each B_simple placed against the B_crit fitted to steps to target.

McCandlish et al. 2018 (arXiv 1812.06162) find the critical batch, past which doubling the batch
no longer nearly halves the steps a training needs, close to the noise scale B_noise, which
B_simple estimates. Measurements come from the sweep's own points (train.noise_scale_every,
metrics.json and noise_scale.json) and from `python -m experiments noise-scale --save` runs kept
in SWEEP/noise_scale/*.json. The measured side is McCandlish's own quantity, fitted to steps
to target (sections/time_to_target.py). The paper's derivation assumes one loss; a GAN is a
two-player game, so the comparison is a test of the prediction, not of the sweep.
"""
from __future__ import annotations

import os
from collections import defaultdict

import matplotlib.ticker

from experiments import grids, records, sweep_files
from experiments.pyplot import plt
from experiments.records import Point
from experiments.reporting.lib import placement as pl
from experiments.reporting.sections import time_to_target as ttt
from sngan.noise_scale import PLAYERS, predicted_critical_batch

KEY, ORDER = "noise_scale", 70
RUNS_DIR = sweep_files.NOISE_SCALE_RUNS  # SWEEP/noise_scale/*.json: saved noise-scale runs
FIGURE = "noise_scale.png"
NAMES = {"d": "D", "g": "G"}


def measurements(points: list[Point], sweep_dir: str) -> list[dict]:
    """One entry per measured run: batch, where it comes from, steps, its summary
    (records.NoiseScale as a dict) and its series ({player: {steps, b_simple, ...}})."""
    out = []
    for p in points:
        if p.record.noise_scale is None:
            continue
        saved = records.read_noise_series(p.dir) or {}
        series = saved.get("series") or {
            player: dict(steps=[h.step for h in p.history],
                         b_simple=[getattr(h, f"b_simple_{player}") for h in p.history])
            for player in PLAYERS}
        out.append(dict(batch=p.record.global_batch_size, source=f"sweep, seed {p.record.seed}",
                        steps=p.record.steps, summary=p.record.noise_scale.to_dict(),
                        series=series))
    for name, run in sweep_files.read_noise_scale_runs(sweep_dir):
        out.append(dict(batch=run.global_batch_size, source=f"noise-scale run ({name})",
                        steps=run.steps,
                        summary=run.noise_scale.to_dict() if run.noise_scale else None,
                        series=run.series, command=run.command))
    return [m for m in out if m["summary"]]


def _cell(e: dict) -> str:
    if e.get("b_simple") is None:
        return "undefined"
    low = f"{e['ci_low']:.0f}" if e.get("ci_low") is not None else "?"
    high = f"{e['ci_high']:.0f}" if e.get("ci_high") is not None else "inf"
    return f"{e['b_simple']:.0f} [{low}, {high}]"


def table(found: list[dict]) -> list[str]:
    lines = ["| batch | measured by | steps | B_simple D [95% CI] | B_simple G [95% CI] | "
             "predicted critical batch (D / G) |", "|---|---|---|---|---|---|"]
    for m in sorted(found, key=lambda m: (m["batch"], m["source"])):
        s = m["summary"]
        crit = " / ".join(str(predicted_critical_batch(s[p].get("b_simple")) or "-")
                          for p in PLAYERS)
        lines.append(f"| {m['batch']} | {m['source']} | {m['steps']} | {_cell(s['d'])} | "
                     f"{_cell(s['g'])} | {crit} |")
    return lines


def figure(found: list[dict], path: str) -> None:
    """B_simple (smoothed) of D and G against training steps, one line per batch size."""
    by_batch = defaultdict(list)
    for m in found:
        by_batch[m["batch"]].append(m)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    cmap = plt.get_cmap("viridis")
    sizes = sorted(by_batch)
    for ax, player in zip(axes, PLAYERS):
        for i, batch in enumerate(sizes):
            s = by_batch[batch][0]["series"][player]
            xy = [(x, y) for x, y in zip(s["steps"], s["b_simple"]) if y is not None and y > 0]
            if xy:
                ax.plot(*zip(*xy), color=cmap(i / max(len(sizes) - 1, 1)),
                        label=f"batch {batch}")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("generator steps")
        ax.set_title(f"{NAMES[player]}: B_simple = tr(Σ)/|G|² (EMA)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gradient noise scale")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    grids.save_figure(fig, path)


SOURCES = ("Rows: {runs} noise-scale runs saved in noise_scale/ and the {measured} of {budget} "
           "budget-sweep points that measured it; the {arm_points} time-to-target points that "
           "measured it are read at each target in the time-to-target section.")
PLACED = ("{source}, batch {batch}: {name}'s B_simple against the B_crit interval of arm "
          "'{arm}': below at {below} of {n} IS targets, inside at {inside}, above at {above}.")
COUPLING = ("- {name}: batch {batch}, {steps} steps, small batches from {source}, BN statistics "
            "{bn}: B_simple D {d}, G {g}.")
CAVEAT = ("The paper's derivation assumes one loss minimised by SGD; in a GAN each player's "
          "gradients change the other's loss, so B_simple of D and of G are each a one-player "
          "reading of a two-player game, and B_noise grows as training proceeds, so a short "
          "run's reading predicts low.")


def placements(found: list[dict], ttt_result: dict | None, arm: str | None) -> list[dict]:
    """Each measurement's B_simple per player placed against the headline arm's B_crit
    interval at every fitted IS target (lib/placement.py)."""
    fitted = ttt.bounded_fits(((ttt_result or {}).get(arm) or {}).get("metrics", {})
                              .get("is_mean", []))
    out = []
    for m in found if fitted else []:
        for p in PLAYERS:
            b = m["summary"][p].get("b_simple")
            if b is not None:
                t = pl.tally((b, r["fit"]["b_crit"], *r["fit"]["b_crit_ci"]) for r in fitted)
                out.append(dict(t.to_dict(), source=m["source"], batch=m["batch"], player=p,
                                b_simple=b))
    return out


def coupling(sweep_dir: str) -> list[dict]:
    """The estimator's coupling: runs in noise_scale/coupling/ with shared and with per-replica
    batch-norm statistics between its small batches."""
    return [dict(name=name, batch=run.global_batch_size, steps=run.steps,
                 source=run.noise_scale.source, bn_cross_replica=run.bn_cross_replica,
                 d=run.noise_scale.d.to_dict(), g=run.noise_scale.g.to_dict())
            for name, run in sweep_files.read_noise_scale_runs(sweep_dir, "coupling")
            if run.noise_scale]


def compute(study, earlier: dict) -> dict | None:
    found = measurements(study.compared, study.sweep_dir)
    if not found:
        return None
    arm = ttt.headline_arm(study)
    arm_points = [p for a in study.time_to_target_arms for p in study.arm(a)
                  if p.record.noise_scale]
    return dict(measurements=found, arm=arm,
                placements=placements(found, earlier.get(ttt.KEY), arm),
                coupling=coupling(study.sweep_dir),
                counts=dict(runs=sum(m["source"].startswith("noise-scale run") for m in found),
                            measured=sum(p.record.noise_scale is not None
                                         for p in study.compared),
                            budget=len(study.compared), arm_points=len(arm_points)))


def render(result: dict, study) -> str:
    lines = ["## Gradient noise scale and the critical batch", "",
             SOURCES.format(**result["counts"]), "", *table(result["measurements"]), ""]
    lines += ["- " + PLACED.format(name=NAMES[p["player"]], arm=result["arm"], **p)
              for p in result["placements"]]
    lines += ["", CAVEAT, "", f"![B_simple vs steps]({FIGURE})"]
    if result["coupling"]:
        lines += ["", "The estimator's coupling (its small batches share batch-norm "
                  "statistics), B_simple [95% CI] from short runs:", ""]
        lines += [COUPLING.format(bn="shared" if c["bn_cross_replica"] else "per replica",
                                  **{k: v for k, v in c.items() if k not in ("d", "g")},
                                  d=_cell(c["d"]), g=_cell(c["g"])) for c in result["coupling"]]
    commands = sorted({m["command"] for m in result["measurements"] if m.get("command")})
    if commands:
        lines += ["", "Measured with:", "", *[f"    {c}" for c in commands]]
    return "\n".join(lines) + "\n"


def draw(result: dict, study) -> None:
    figure(result["measurements"], os.path.join(study.out_dir, FIGURE))
