"""The report's gradient-noise-scale section: B_simple for D and G per batch size, the critical
batch it predicts, and that prediction set against the sweep's measured gains.

McCandlish et al. 2018 (arXiv 1812.06162) find the critical batch, past which doubling the batch
no longer nearly halves the steps a training needs, close to the noise scale B_noise, which
B_simple estimates. Measurements come from the sweep's own points (train.noise_scale_every,
metrics.json and noise_scale.json) and from `python -m experiments noise-scale --save` runs kept
in SWEEP/noise_scale/*.json. The measured side is the batch where the IS gain per doubling
falls below half its largest value. The paper's derivation assumes one loss; a GAN is a
two-player game, so the comparison is a test of the prediction, not of the sweep.
"""
from __future__ import annotations

import glob
import json
import math
import os
from collections import defaultdict

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments import grids, records  # noqa: E402
from experiments.records import Point  # noqa: E402
from sngan.noise_scale import PLAYERS, predicted_critical_batch  # noqa: E402

RUNS_DIR = "noise_scale"  # SWEEP/noise_scale/*.json: saved noise-scale command results
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
    for path in sorted(glob.glob(os.path.join(sweep_dir, RUNS_DIR, "*.json"))):
        try:
            with open(path) as f:
                run = json.load(f)
            out.append(dict(batch=int(run["global_batch_size"]),
                            source=f"noise-scale run ({os.path.basename(path)})",
                            steps=int(run["steps"]), summary=run["noise_scale"],
                            series=run["series"], command=run.get("command")))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a noise-scale result: not this section's
    return [m for m in out if m["summary"]]


def gains_per_doubling(rows: list[dict]) -> list[dict]:
    """IS gain per doubling of the batch between consecutive rows of the batch table."""
    pts = [(r["batch"], r["is_mean"]) for r in rows
           if r.get("is_mean") is not None and math.isfinite(r["is_mean"])]
    return [dict(low=a, high=b, gain=(y - x) / math.log2(b / a))
            for (a, x), (b, y) in zip(pts, pts[1:])]


def measured_critical_batch(rows: list[dict]) -> tuple[int | None, str]:
    """(batch, how it was found): the first batch after the largest gain from which a doubling
    gains less than half of it; None with the reason when the sweep does not show one."""
    gains = gains_per_doubling(rows)
    if not gains or max(g["gain"] for g in gains) <= 0:
        return None, "the IS does not rise with the batch in this sweep"
    best = max(range(len(gains)), key=lambda i: gains[i]["gain"])
    top = gains[best]["gain"]
    for g in gains[best + 1:]:
        if g["gain"] < top / 2:
            return g["low"], (f"the IS gain per doubling peaks at {top:+.2f} "
                              f"({gains[best]['low']} -> {gains[best]['high']}) and falls to "
                              f"{g['gain']:+.2f} from {g['low']} to {g['high']}")
    return None, (f"the IS gain per doubling peaks at {top:+.2f} ({gains[best]['low']} -> "
                  f"{gains[best]['high']}) and stays above half of it up to the largest batch, "
                  f"{gains[-1]['high']}")


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


def _judge(predicted: list[int], rows: list[dict], measured: int | None, how: str) -> str:
    """How one player's predicted critical batches fare against the sweep's."""
    if not predicted:
        return "gives no prediction (no positive |G|^2 over its window)"
    if measured is None and "largest batch" in how:
        if predicted[-1] * 2 >= max(r["batch"] for r in rows):
            return "does not contradict it (within one doubling of the largest batch, or beyond)"
        return "disagrees: it puts diminishing returns well below the largest batch"
    if measured is None:
        return "cannot be tested by this sweep"
    if predicted[0] / 2 <= measured <= predicted[-1] * 2:
        return "agrees (within one doubling)"
    return "disagrees (more than one doubling away)"


def _span(predicted: list[int]) -> str:
    if not predicted:
        return "none"
    return str(predicted[0]) if len(predicted) == 1 else f"{predicted[0]} to {predicted[-1]}"


def comparison(found: list[dict], rows: list[dict]) -> str:
    """The paragraph: each player's prediction against the sweep's measured gains, agreement or
    disagreement said plainly, with the caveats."""
    measured, how = measured_critical_batch(rows)
    predicted = {p: sorted({c for m in found if (c := predicted_critical_batch(
        m["summary"][p].get("b_simple")))}) for p in PLAYERS}
    found_text = f"so the measured critical batch is {measured}" if measured else ""
    text = (f"Measured: {how}{', ' + found_text if found_text else ''}. Predicted (the power of "
            f"two nearest B_simple, per run): D {_span(predicted['d'])}, G "
            f"{_span(predicted['g'])}. D's prediction "
            f"{_judge(predicted['d'], rows, measured, how)}; G's "
            f"{_judge(predicted['g'], rows, measured, how)}.")
    caveat = ("The paper's derivation assumes one loss minimised by SGD; GAN training is a "
              "two-player game whose players' gradients change each other's loss, so B_simple "
              "of D and of G are each a one-player reading of a two-player game. The sweep "
              "trains equal steps, so a larger batch also sees more images; the paper's critical "
              "batch is where the steps to a target loss stop halving, and it finds B_noise "
              "growing as training proceeds, so a measurement taken early predicts low.")
    return f"{text} {caveat}"


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


def critical_batch_markdown(points: list[Point], rows: list[dict], sweep_dir: str,
                         out_dir: str) -> str:
    """The section (a Markdown string starting with '## '); writes its figure into out_dir."""
    found = measurements(points, sweep_dir)
    lines = ["## Gradient noise scale and the critical batch", ""]
    if not found:
        return "\n".join(lines + ["- The records carry no noise-scale measurements "
                                  "(train.noise_scale_every was 0 or the run predates it)."]) \
            + "\n"
    if not any(p.record.noise_scale for p in points):
        lines.append("- The sweep's points carry no noise-scale measurements; the rows come "
                     f"from noise-scale runs saved in {RUNS_DIR}/.")
    figure(found, os.path.join(out_dir, FIGURE))
    lines += ["", *table(found), "", comparison(found, rows), "",
              f"![B_simple vs steps]({FIGURE})"]
    commands = sorted({m["command"] for m in found if m.get("command")})
    if commands:
        lines += ["", "Measured with:", "", *[f"    {c}" for c in commands]]
    return "\n".join(lines) + "\n"

