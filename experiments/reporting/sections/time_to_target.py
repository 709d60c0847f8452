"""Time to target: how many fewer steps a bigger batch buys, per arm that sets each batch
size's steps (`steps_by_batch`). Per IS and accuracy target: each curve's steps to it
(lib/crossings.py), S = S_min (1 + B_crit / B) fitted (lib/mccandlish.py), the practical table
(the config's baseline batch to its bigger batches) and B_simple of the same runs where each
target is reached, against the fitted B_crit (lib/placement.py). The headline: the config's
headline arm at the highest IS target whose baseline -> target saving is measured.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from experiments.records import Point
from experiments.reporting.lib import crossings as cx
from experiments.reporting.lib import markdown, mccandlish, plots
from experiments.reporting.lib import placement as pl
from experiments.reporting.lib.crossings import METRICS, MIN_BATCH_SIZES, PLAYERS, Crossing
from experiments.reporting.lib.mccandlish import Fit, Speedup
from experiments.reporting.lib.metrics import describe
from experiments.reporting.study import precision_of

KEY, ORDER = "time_to_target", 40


def fmt(x, spec=".0f") -> str:
    return "-" if x is None or x != x else format(x, spec)


def ci_text(ci, spec=".0f") -> str:
    return "" if ci is None else f" [{fmt(ci[0], spec)}, {fmt(ci[1], spec)}]"


@dataclass(frozen=True)
class BSimpleRange:
    """One player's B_simple where `n` curves reach a target: geometric mean, min, max."""
    geomean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class TargetResult:
    """One target: each batch's crossings (str(batch) -> one per seed), the batches all of
    whose seeds reach it, the fit, the practical table and B_simple there per player."""
    target: float
    crossings: dict[str, list[Crossing]]
    reaching: list[int]
    fit: Fit | None
    speedups: list[Speedup]
    b_simple: dict[str, BSimpleRange | None]


@dataclass(frozen=True)
class NoiseAgainstBCrit:
    """Each player's B_simple against B_crit's interval over the fitted IS targets, and
    B_crit's change from the first fitted target to the last (lib/placement.py)."""
    targets: int
    d: pl.Tally
    g: pl.Tally
    b_crit_change: str
    b_crit_first: float
    b_crit_last: float
    first_target: float
    last_target: float


@dataclass(frozen=True)
class Headline:
    """The baseline -> target batch saving at the highest IS target where it is measured."""
    target: float
    baseline_batch: int
    target_batch: int
    steps_saved: float
    ci: tuple[float, float] | None
    images_spent: float
    b_crit: float | None
    b_crit_ci: tuple[float, float] | None


@dataclass(frozen=True)
class ArmResult:
    batches: list[int]
    n_dis: int
    precision: str
    seeds: dict[str, list[int]]
    metrics: dict[str, list[TargetResult]]  # record field -> one per target
    noise_scale: NoiseAgainstBCrit | None
    headline: Headline | None


def full_arms(study) -> dict[str, list[Point]]:
    """{arm: its finished points with a curve} of the arms with enough batch sizes (not the
    lr search's: sections/lr_search.py reads them)."""
    arms = {a: [p for p in study.arm(a) if p.record.status == "done" and p.history]
            for a in study.time_to_target_arms if a not in study.comparison.lr_search_arms}
    return {a: pts for a, pts in arms.items()
            if len({p.record.global_batch_size for p in pts}) >= MIN_BATCH_SIZES}


def headline_arm(study) -> str | None:
    """The config's headline arm, or the only full arm when the config names none."""
    arms, named = full_arms(study), study.comparison.headline_arm
    if named is not None:
        return named if named in arms else None
    return next(iter(arms)) if len(arms) == 1 else None


def b_simple_range(curves, metric: str, target: float, player: str) -> BSimpleRange | None:
    vals = [v for c in curves if (x := c.crossing(metric, target)).reached
            and (v := c.b_simple_at(player, x.step)) is not None]
    return BSimpleRange(describe(vals).geomean, min(vals), max(vals), len(vals)) if vals else None


def target_result(curves, metric, target, baseline, bigger, bootstrap) -> TargetResult:
    found = cx.crossings(curves, metric, target)
    ups = [mccandlish.speedup(found, baseline, b, bootstrap=bootstrap) for b in bigger]
    return TargetResult(target, {str(b): cs for b, cs in found.items()},
                        cx.reaching_batches(found),
                        mccandlish.fit(found, curves[0].n_dis, bootstrap=bootstrap),
                        [u for u in ups if u is not None],
                        {p: b_simple_range(curves, metric, target, p) for p in PLAYERS})


def noise_against_b_crit(rows: list[TargetResult]) -> NoiseAgainstBCrit | None:
    fitted = [r for r in rows if r.fit and r.fit.bounded]
    if not fitted:
        return None
    d, g = (pl.tally((r.b_simple[p].geomean, r.fit.b_crit, *r.fit.b_crit_ci)
                     for r in fitted if r.b_simple[p]) for p in PLAYERS)
    lo, hi = fitted[0].fit, fitted[-1].fit
    return NoiseAgainstBCrit(len(fitted), d, g,
                             pl.change((lo.b_crit, *lo.b_crit_ci), (hi.b_crit, *hi.b_crit_ci)),
                             lo.b_crit, hi.b_crit, fitted[0].target, fitted[-1].target)


def headline(rows: list[TargetResult], baseline: int, target: int) -> Headline | None:
    """The highest IS target whose baseline -> target saving is measured (no censoring)."""
    for r in reversed(rows):
        for u in r.speedups:
            if u.batch == target and not u.bound:
                return Headline(r.target, baseline, target, u.steps_saved, u.ci,
                                u.images_spent, r.fit and r.fit.b_crit, r.fit and r.fit.b_crit_ci)
    return None


def analyse_arm(points: list[Point], comparison, bootstrap: int) -> ArmResult:
    c, curves = comparison, [cx.curve_of(p) for p in points]
    batches = sorted({x.batch for x in curves})
    metrics = {m: [target_result(curves, m, t, c.baseline_batch, c.bigger_batches, bootstrap)
                   for t in cx.target_grid(curves, m)] for m in METRICS}
    return ArmResult(batches, curves[0].n_dis, precision_of(points[0]),
                     {str(b): sorted(x.seed for x in curves if x.batch == b) for b in batches},
                     metrics, noise_against_b_crit(metrics["is_mean"]),
                     headline(metrics["is_mean"], c.baseline_batch, c.target_batch))


def compute(study, earlier: dict) -> dict[str, ArmResult] | None:
    return {arm: analyse_arm(pts, study.comparison, study.bootstrap)
            for arm, pts in full_arms(study).items()} or None


# -- Markdown: tables and fixed templates --------------------------------------------------------
HEADLINE = ("**{ratio:g}x the batch ({baseline_batch} -> {target_batch}): steps saved to IS "
            "{target:.1f} {steps_saved:.2f}x{ci}, images spent {images_spent:.2f}x; B_crit there "
            "{b_crit}{b_crit_ci} (arm '{arm}').**")
NOISE = ("{name}'s B_simple against the B_crit interval: below at {below} of {n} targets, "
         "inside at {inside}, above at {above} (B_simple / B_crit {ratio_low:.2g} to "
         "{ratio_high:.2g}).")
CHANGE = ("B_crit from IS {first_target:.1f} to IS {last_target:.1f}: {b_crit_first:.0f} -> "
          "{b_crit_last:.0f}, {b_crit_change}. One player's B_simple is a one-player reading "
          "of a two-player game.")
INTRO = ("{n} points ({precision}; seeds per batch size {counts}), lr constant, each batch size "
         "trained for its own number of steps; S = S_min (1 + B_crit / B), E = E_min (1 + B / "
         "B_crit), E the real images D sees (McCandlish et al. 2018, arXiv 1812.06162).")
CROSSINGS = ("Generator steps to each target (geometric mean over seeds, interpolated between "
             "evaluations; censored: not reached by the last step):")
FIT = ("Fit per {label} target (least squares on log steps, 95% bootstrap intervals over seeds; "
       "residual: measured / fitted steps - 1, smallest batch first; * censored, a bound):")
PRACTICAL = ("From batch {base}: steps saved S_{base} / S_B [95% bootstrap] and images spent "
             "E_B / E_{base} (perfect scaling: B / {base} x fewer steps at 1x the images):")
NOISE_TABLE = "B_simple where each IS target is reached (geometric mean [min, max]) and B_crit:"
AT_BOUND = {"upper": "> {top:.0f} (S ~ 1/B throughout)", "lower": "~ 0 (S does not fall with B)",
            "": "{b_crit:.0f}{ci}"}


def headline_text(h: dict, arm: str) -> str:
    return HEADLINE.format(**{**h, "ci": ci_text(h["ci"], ".2f"), "b_crit": fmt(h["b_crit"]),
                              "b_crit_ci": ci_text(h["b_crit_ci"])},
                           arm=arm, ratio=h["target_batch"] / h["baseline_batch"])


def noise_text(verdict: dict) -> list[str]:
    """Each player's placement against B_crit and B_crit's change, as Markdown list items."""
    return (["- " + NOISE.format(name=p.upper(), **verdict[p]) for p in PLAYERS]
            + ["- " + CHANGE.format(**verdict)])


def _steps_cell(cs: list[Crossing]) -> str:
    reached = [c.step for c in cs if c.reached]
    if len(reached) == len(cs):
        return f"{describe(reached).geomean:.0f}"
    return f"{len(reached)}/{len(cs)} seeds (> {max(c.step for c in cs):.0f} censored)"


def _fit_cells(f: Fit | None) -> list[str]:
    if f is None:
        return ["-"] * 5
    crit = AT_BOUND[f.at_bound].format(top=max(f.batches) * mccandlish.GRID_SPAN,
                                       b_crit=f.b_crit, ci=ci_text(f.b_crit_ci))
    res = ", ".join(f"{v:+.0%}" + "*" * c for v, c in zip(f.residuals, f.censored))
    return [f"{f.s_min:.0f}{ci_text(f.s_min_ci)}", f"{f.e_min:,.0f}{ci_text(f.e_min_ci, ',.0f')}",
            crit, f"{max(abs(v) for v in f.residuals):.0%}", res]


def _speedup_cells(r: TargetResult, batch: int) -> list[str]:
    u = next((u for u in r.speedups if u.batch == batch), None)
    if u is None or u.bound == "?":
        return ["-", "-"]
    return [f"{u.bound}{u.steps_saved:.2f}x{ci_text(u.ci, '.2f')}", f"{u.images_spent:.2f}x"]


def _metric_lines(metric: str, rows: list[TargetResult], batches, base: int, bigger) -> list[str]:
    m = METRICS[metric]
    if not rows:
        return [f"No {m.label} target is reached by {MIN_BATCH_SIZES} batch sizes.", ""]
    t = [f"{r.target:{m.target_fmt}}" for r in rows]
    steps = [[f"{m.label} {x}"] + [_steps_cell(r.crossings[str(b)]) if str(b) in r.crossings
                                   else "-" for b in batches] for x, r in zip(t, rows)]
    return [f"### Steps to {m.label} targets", "", CROSSINGS, "",
            markdown.table(["target"] + [f"batch {b}" for b in batches], steps), "",
            FIT.format(label=m.label), "",
            markdown.table(["target", "S_min (steps)", "E_min (real images)", "B_crit",
                            "largest residual", "residuals"],
                           [[x] + _fit_cells(r.fit) for x, r in zip(t, rows)]), "",
            PRACTICAL.format(base=base, label=m.label), "",
            markdown.table(["target"] + [c for b in bigger for c in (
                f"{base} -> {b}: steps saved", "images spent")],
                [[x] + [c for b in bigger for c in _speedup_cells(r, b)]
                 for x, r in zip(t, rows)]), ""]


def _noise_lines(rows: list[TargetResult], verdict: NoiseAgainstBCrit | None) -> list[str]:
    def cell(n):
        return "-" if not n else f"{n.geomean:.0f} [{n.low:.0f}, {n.high:.0f}]"
    table = [[f"{r.target:.1f}", f"{r.fit.b_crit:.0f}{ci_text(r.fit.b_crit_ci)}"
              if r.fit and r.fit.bounded else "-", cell(r.b_simple["d"]), cell(r.b_simple["g"])]
             for r in rows]
    return ["### Noise scale against the critical batch", "", NOISE_TABLE, "",
            markdown.table(["IS target", "B_crit", "B_simple D", "B_simple G"], table), "",
            *(noise_text(asdict(verdict)) if verdict else
              ["No IS target has a bounded B_crit fit."]), ""]


def render(result: dict[str, ArmResult], study) -> str:
    c, md = study.comparison, []
    for arm, r in result.items():
        md += [f"## Time to target: arm '{arm}'", "",
               INTRO.format(n=sum(map(len, r.seeds.values())), precision=r.precision,
                            counts=", ".join(f"{b}: {len(s)}" for b, s in r.seeds.items())), ""]
        md += [headline_text(asdict(r.headline), arm), ""] if r.headline else []
        for metric, rows in r.metrics.items():
            md += _metric_lines(metric, rows, r.batches, c.baseline_batch, c.bigger_batches)
        md += _noise_lines(r.metrics["is_mean"], r.noise_scale)
        md += [f"![{alt}]({arm}_{name})" for name, alt in plots.TIME_TO_TARGET_FIGURES] + [""]
    return "\n".join(md)


def draw(result: dict[str, ArmResult], study) -> None:
    for arm, r in result.items():
        plots.time_to_target_figures(r, [p for p in study.arm(arm) if p.record.status == "done"
                                         and p.history], study.out_dir, arm)
