"""Gradient noise scale: B_simple of D and G per measured run, the critical batch it predicts,
and each B_simple placed against the B_crit fitted to steps to target (McCandlish et al. 2018,
arXiv 1812.06162, find B_crit close to the noise scale, which B_simple estimates). Readings
come from the budget sweep's points (train.noise_scale_every) and from `python -m experiments
noise-scale --save` runs in SWEEP/noise_scale/; the runs in noise_scale/coupling/ show the
estimator's coupling through batch-norm statistics.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from experiments import records, sweep_files
from experiments.records import NoiseScale, NoiseScaleEstimate, Point
from experiments.reporting.lib import markdown, plots
from experiments.reporting.lib import placement as pl
from experiments.reporting.lib.mccandlish import Fit
from experiments.reporting.sections import time_to_target as ttt
from sngan.noise_scale import PLAYERS, predicted_critical_batch

KEY, ORDER = "noise_scale", 70
RUNS_DIR = sweep_files.NOISE_SCALE_RUNS  # SWEEP/noise_scale/*.json: saved noise-scale runs
FIGURE = "noise_scale.png"
SOURCES = ("Rows: {runs} noise-scale runs saved in noise_scale/ and the {measured} of {budget} "
           "budget-sweep points that measured it; the {arm_points} time-to-target points that "
           "measured it are read at each target in the time-to-target section.")
PLACED = ("- {source}, batch {batch}: {name}'s B_simple against the B_crit interval of arm "
          "'{arm}': below at {below} of {n} IS targets, inside at {inside}, above at {above}.")
CAVEAT = ("The paper's derivation assumes one loss minimised by SGD; in a GAN each player's "
          "gradients change the other's loss, so B_simple of D and of G are each a one-player "
          "reading of a two-player game, and B_noise grows as training proceeds, so a short "
          "run's reading predicts low.")
COUPLING = ("The estimator's coupling (its small batches share batch-norm statistics, or each "
            "replica's own), B_simple [95% CI] from short runs:")
BN = {True: "shared", False: "per replica"}


@dataclass(frozen=True)
class Measurement:
    """One measured run: where it comes from, its summary over the last window and its
    series ({player: {steps, b_simple, ...}}); `command` of a saved noise-scale run."""
    batch: int
    source: str
    steps: int
    summary: NoiseScale
    series: dict
    command: str | None = None


@dataclass(frozen=True)
class Placement:
    """One measurement's B_simple of one player against the headline arm's B_crit interval
    at every fitted IS target (a lib/placement.py Tally, flattened)."""
    source: str
    batch: int
    player: str
    b_simple: float
    n: int
    below: int
    inside: int
    above: int
    ratio_low: float | None
    ratio_high: float | None


@dataclass(frozen=True)
class CouplingRun:
    """A run of noise_scale/coupling/: the BN statistics its small batches share or not."""
    name: str
    batch: int
    steps: int
    source: str
    bn_cross_replica: bool
    d: NoiseScaleEstimate
    g: NoiseScaleEstimate


@dataclass(frozen=True)
class Counts:
    runs: int
    measured: int
    budget: int
    arm_points: int


@dataclass(frozen=True)
class NoiseScaleSection:
    measurements: list[Measurement]
    arm: str | None
    placements: list[Placement]
    coupling: list[CouplingRun]
    counts: Counts


def measurements(points: list[Point], sweep_dir: str) -> list[Measurement]:
    out = []
    for p in points:
        if p.record.noise_scale is None:
            continue
        series = (records.read_noise_series(p.dir) or {}).get("series") or {
            player: dict(steps=[h.step for h in p.history],
                         b_simple=[getattr(h, f"b_simple_{player}") for h in p.history])
            for player in PLAYERS}
        out.append(Measurement(p.record.global_batch_size, f"sweep, seed {p.record.seed}",
                               p.record.steps, p.record.noise_scale, series))
    return out + [Measurement(run.global_batch_size, f"noise-scale run ({name})", run.steps,
                              run.noise_scale, run.series, run.command)
                  for name, run in sweep_files.read_noise_scale_runs(sweep_dir)
                  if run.noise_scale]


def placements(found: list[Measurement], fits: list[Fit]) -> list[Placement]:
    """Each measurement's B_simple per player against every bounded fit's B_crit interval."""
    return [Placement(m.source, m.batch, p, b, **asdict(pl.tally(
                (b, f.b_crit, *f.b_crit_ci) for f in fits)))
            for m in (found if fits else []) for p in PLAYERS
            if (b := getattr(m.summary, p).b_simple) is not None]


def coupling(sweep_dir: str) -> list[CouplingRun]:
    return [CouplingRun(name, run.global_batch_size, run.steps, run.noise_scale.source,
                        run.bn_cross_replica, run.noise_scale.d, run.noise_scale.g)
            for name, run in sweep_files.read_noise_scale_runs(sweep_dir, "coupling")
            if run.noise_scale]


def compute(study, earlier: dict) -> NoiseScaleSection | None:
    found = measurements(study.compared, study.sweep_dir)
    if not found:
        return None
    arm = ttt.headline_arm(study)
    counts = Counts(sum(m.command is not None for m in found),
                    sum(p.record.noise_scale is not None for p in study.compared),
                    len(study.compared), sum(p.record.noise_scale is not None
                                             for a in study.time_to_target_arms
                                             for p in study.arm(a)))
    fitted = (earlier.get(ttt.KEY) or {}).get(arm)
    fits = [r.fit for r in fitted.metrics["is_mean"] if r.fit and r.fit.bounded] if fitted else []
    return NoiseScaleSection(found, arm, placements(found, fits), coupling(study.sweep_dir),
                             counts)


def _cell(e: NoiseScaleEstimate) -> str:
    if e.b_simple is None:
        return "undefined"
    low = "?" if e.ci_low is None else f"{e.ci_low:.0f}"
    high = "inf" if e.ci_high is None else f"{e.ci_high:.0f}"
    return f"{e.b_simple:.0f} [{low}, {high}]"


def render(result: NoiseScaleSection, study) -> str:
    rows = [[str(m.batch), m.source, str(m.steps), _cell(m.summary.d), _cell(m.summary.g),
             " / ".join(str(predicted_critical_batch(getattr(m.summary, p).b_simple) or "-")
                        for p in PLAYERS)]
            for m in sorted(result.measurements, key=lambda m: (m.batch, m.source))]
    lines = ["## Gradient noise scale and the critical batch", "",
             SOURCES.format(**asdict(result.counts)), "",
             markdown.table(["batch", "measured by", "steps", "B_simple D [95% CI]",
                             "B_simple G [95% CI]", "predicted critical batch (D / G)"], rows),
             "", *[PLACED.format(name=p.player.upper(), arm=result.arm, **asdict(p))
                   for p in result.placements],
             "", CAVEAT, "", f"![B_simple vs steps]({FIGURE})"]
    if result.coupling:
        lines += ["", COUPLING, "", markdown.table(
            ["run", "batch", "steps", "small batches from", "BN statistics", "B_simple D",
             "B_simple G"],
            [[c.name, str(c.batch), str(c.steps), c.source, BN[c.bn_cross_replica], _cell(c.d),
              _cell(c.g)] for c in result.coupling])]
    commands = sorted({m.command for m in result.measurements if m.command})
    lines += ["", "Measured with:", "", *[f"    {c}" for c in commands]] if commands else []
    return "\n".join(lines) + "\n"


def draw(result: NoiseScaleSection, study) -> None:
    plots.noise_scale_figure(result.measurements, os.path.join(study.out_dir, FIGURE))
