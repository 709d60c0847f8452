"""The report's gradient-noise-scale section: B_simple for D and G per batch size, the critical
batch it predicts, and that prediction set against the sweep's measured gains.

McCandlish et al. 2018 (arXiv 1812.06162) find the critical batch, past which doubling the batch
no longer nearly halves the steps a training needs, close to the noise scale B_noise, which
B_simple estimates. Measurements come from the sweep's own points (train.noise_scale_every,
metrics.json and noise_scale.json) and from `python -m experiments noise-scale --save` runs kept
in SWEEP/noise_scale/*.json. The measured side is McCandlish's own quantity, fitted to steps
to target (time_to_target_report.py). The paper's derivation assumes one loss; a GAN is a
two-player game, so the comparison is a test of the prediction, not of the sweep.
"""
from __future__ import annotations

import os
from collections import defaultdict

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from experiments import grids, records, sweep_files  # noqa: E402
from experiments.records import Point  # noqa: E402
from sngan.noise_scale import PLAYERS, predicted_critical_batch  # noqa: E402

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


def measured_b_crit(time_to_target: dict | None) -> list[dict]:
    """Per IS target of the first time-to-target arm with a bounded fit: target, B_crit and its
    interval ([] without one)."""
    for arm, result in sorted((time_to_target or {}).items()):
        rows = (result.get("metrics") or {}).get("is_mean") or []
        fits = [dict(target=r["target"], b_crit=r["fit"]["b_crit"], ci=r["fit"]["b_crit_ci"],
                     arm=arm) for r in rows if r.get("fit") and not r["fit"]["at_bound"]]
        if fits:
            return fits
    return []


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


def _range(low: float, high: float) -> str:
    """'32 to 100', or one number when both ends round alike (one fit without an interval)."""
    return f"{low:.0f}" if f"{low:.0f}" == f"{high:.0f}" else f"{low:.0f} to {high:.0f}"


def _bounds(m: dict) -> tuple[float, float]:
    """A fitted B_crit's 95% interval, or the fit itself when it has none."""
    ci = m["ci"] or (m["b_crit"], m["b_crit"])
    return ci[0], ci[-1]


def _judge(per_run: list[int], measured: list[dict]) -> str:
    """How one player's predicted critical batches (one per run) fare against the fitted
    B_crit, target by target (one wide interval must not speak for the others): a verb phrase
    completing "D's prediction ..."."""
    predicted = sorted(set(per_run))
    if not predicted:
        return "is missing (no positive |G|^2 over its window)"
    if not measured:
        return "cannot be tested without a time-to-target arm"
    hits, misses = [], []
    for m in measured:
        low, high = _bounds(m)
        (hits if low / 2 <= predicted[-1] and predicted[0] <= high * 2 else misses).append(m)

    def span(ms):
        return min(_bounds(m)[0] for m in ms), max(_bounds(m)[1] for m in ms)

    def side(ms):
        return " or ".join(sorted({"below" if predicted[-1] < _bounds(m)[0] / 2 else "above"
                                   for m in ms}))
    if not hits:
        return (f"disagrees: more than one doubling {side(misses)} the measured "
                f"{_range(*span(misses))}")
    low, high = span(hits)
    runs = sum(low / 2 <= c <= high * 2 for c in per_run)
    where = f"within one doubling of the measured {_range(low, high)}, where {runs} of " \
        f"{len(per_run)} runs' predictions lie"
    if not misses:
        return f"agrees ({where})"
    at = ", ".join(f"IS {m['target']:.1f}" for m in hits)
    return (f"agrees at only {len(hits)} of {len(measured)} IS targets ({at}: {where}) and is "
            f"more than one doubling {side(misses)} the measured {_range(*span(misses))} at "
            f"the others")


def _span(predicted: list[int]) -> str:
    if not predicted:
        return "none"
    return str(predicted[0]) if len(predicted) == 1 else f"{predicted[0]} to {predicted[-1]}"


def comparison(found: list[dict], measured: list[dict]) -> str:
    """The paragraph: each player's prediction against the critical batch measured from steps
    to target (measured_b_crit), agreement or disagreement said plainly, with the caveats."""
    per_run = {p: [c for m in found if (c := predicted_critical_batch(
        m["summary"][p].get("b_simple")))] for p in PLAYERS}
    predicted = {p: sorted(set(per_run[p])) for p in PLAYERS}
    if measured:
        at = [f"{m['b_crit']:.0f} at IS {m['target']:.1f}" for m in measured]
        how = (f"Measured (steps to IS targets, arm '{measured[0]['arm']}', McCandlish's fit "
               "S = S_min (1 + B_crit / B)): B_crit "
               + (at[0] if len(at) == 1 else f"from {at[0]} to {at[-1]}"))  # one fit: no range
    else:
        how = ("Measured: nothing yet. The critical batch is where the steps to a target stop "
               "halving as the batch doubles, so it needs runs trained to targets at constant "
               "lr (the reference config's sweep 'constant_lr'); an equal-steps comparison "
               "cannot give it")
    text = (f"{how}. Predicted (the power of two nearest B_simple, per run): D "
            f"{_span(predicted['d'])}, G {_span(predicted['g'])}. D's prediction "
            f"{_judge(per_run['d'], measured)}; G's prediction "
            f"{_judge(per_run['g'], measured)}.")
    caveat = ("The paper's derivation assumes one loss minimised by SGD; GAN training is a "
              "two-player game whose players' gradients change each other's loss, so B_simple "
              "of D and of G are each a one-player reading of a two-player game. The paper "
              "finds B_noise growing as training proceeds, so a measurement taken early "
              "predicts low.")
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


def critical_batch_markdown(points: list[Point], sweep_dir: str, out_dir: str,
                            time_to_target: dict | None = None) -> str:
    """The section (a Markdown string starting with '## '); writes its figure into out_dir.
    `time_to_target`: the time-to-target section's results, whose fits are the measured side."""
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
    lines += ["", *table(found), "", comparison(found, measured_b_crit(time_to_target)), "",
              f"![B_simple vs steps]({FIGURE})"]
    commands = sorted({m["command"] for m in found if m.get("command")})
    if commands:
        lines += ["", "Measured with:", "", *[f"    {c}" for c in commands]]
    return "\n".join(lines) + "\n"

