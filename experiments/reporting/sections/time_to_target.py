"""Time to target: how many fewer steps a bigger batch buys, per arm that sets each batch
size's steps (`steps_by_batch`: runs made to reach targets, not to stop at one budget).

Per IS and accuracy target: each curve's steps to it (lib/crossings.py), McCandlish's
S = S_min (1 + B_crit / B) fitted (lib/mccandlish.py), the practical table (the config's
baseline batch to its bigger batches: steps saved, images spent) and the gradient noise scale
of the same runs read where each target is reached, placed against the fitted B_crit
(lib/placement.py). The headline is the config's headline arm at the highest IS target whose
baseline -> target saving is measured.
"""
from __future__ import annotations

from experiments.records import Point
from experiments.reporting.lib import markdown, mccandlish, plots
from experiments.reporting.lib import placement as pl
from experiments.reporting.lib.crossings import (
    METRICS,
    crossings,
    curve_of,
    reaching_batches,
    target_grid,
)
from experiments.reporting.lib.metrics import describe
from experiments.reporting.study import precision_of

KEY, ORDER = "time_to_target", 40
MIN_BATCH_SIZES = 3  # an arm with fewer is a probe (lr_probe.py), not fitted


def fmt(x, spec=".0f") -> str:
    return "-" if x is None or x != x else format(x, spec)


def ci_text(ci, spec=".0f") -> str:
    return "" if ci is None else f" [{fmt(ci[0], spec)}, {fmt(ci[1], spec)}]"


def full_arms(study) -> dict[str, list[Point]]:
    """{arm: its finished points with a curve} of the arms with enough batch sizes."""
    out = {}
    for arm in study.time_to_target_arms:
        if arm in study.comparison.lr_search_arms:  # the lr search's own section reads them
            continue
        pts = [p for p in study.arm(arm) if p.record.status == "done" and p.history]
        if len({p.record.global_batch_size for p in pts}) >= MIN_BATCH_SIZES:
            out[arm] = pts
    return out


def headline_arm(study) -> str | None:
    """The config's headline arm, or the only full arm when the config names none."""
    arms = full_arms(study)
    named = study.comparison.headline_arm
    if named is not None:
        return named if named in arms else None
    return next(iter(arms)) if len(arms) == 1 else None


def _b_simple_at(curves, metric: str, target: float) -> dict:
    out = {}
    for player in ("d", "g"):
        vals = [v for c in curves if c.crossing(metric, target).reached
                and (v := c.b_simple_at(player, c.crossing(metric, target).step)) is not None]
        out[player] = (dict(geomean=describe(vals).geomean, low=min(vals), high=max(vals),
                            n=len(vals)) if vals else None)
    return out


def analyse_arm(points: list[Point], baseline: int, bigger, bootstrap: int) -> dict:
    """Per metric: targets, per-batch crossings, fits, speed-ups and B_simple at the targets."""
    curves = [curve_of(p) for p in points]
    n_dis = curves[0].n_dis
    batches = sorted({c.batch for c in curves})
    out = {"batches": batches, "n_dis": n_dis, "precision": precision_of(points[0]),
           "seeds": {str(b): sorted(c.seed for c in curves if c.batch == b) for b in batches},
           "metrics": {}}
    for metric in METRICS:
        rows = []
        for target in target_grid(curves, metric):
            found = crossings(curves, metric, target)
            f = mccandlish.fit(found, n_dis, bootstrap=bootstrap)
            ups = [mccandlish.speedup(found, baseline, b, bootstrap=bootstrap) for b in bigger]
            rows.append(dict(
                target=target,
                crossings={str(b): [dict(step=c.step, censored=c.censored,
                                         before_first=c.before_first) for c in cs]
                           for b, cs in found.items()},
                reaching=reaching_batches(found), fit=f.to_dict() if f else None,
                speedups=[u.to_dict() for u in ups if u is not None],
                b_simple=_b_simple_at(curves, metric, target)))
        out["metrics"][metric] = rows
    out["noise_scale"] = noise_against_b_crit(out["metrics"]["is_mean"])
    return out


def bounded_fits(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["fit"] and not r["fit"]["at_bound"] and r["fit"]["b_crit_ci"]]


def noise_against_b_crit(rows: list[dict]) -> dict | None:
    """Each player's B_simple placed against the B_crit interval at every fitted IS target,
    and whether B_crit moved from the lowest fitted target to the highest beyond its
    intervals."""
    fitted = bounded_fits(rows)
    if not fitted:
        return None
    out = {"targets": len(fitted)}
    for p in ("d", "g"):
        out[p] = pl.tally((r["b_simple"][p]["geomean"], r["fit"]["b_crit"],
                           *r["fit"]["b_crit_ci"]) for r in fitted
                          if r["b_simple"].get(p)).to_dict()
    lo, hi = fitted[0]["fit"], fitted[-1]["fit"]
    out["b_crit_change"] = pl.change((lo["b_crit"], *lo["b_crit_ci"]),
                                     (hi["b_crit"], *hi["b_crit_ci"]))
    out["b_crit_first"], out["b_crit_last"] = lo["b_crit"], hi["b_crit"]
    out["first_target"], out["last_target"] = fitted[0]["target"], fitted[-1]["target"]
    return out


def headline(result: dict, baseline: int, target: int) -> dict | None:
    """The highest IS target whose baseline -> target saving is measured (no censoring)."""
    best = None
    for r in result["metrics"]["is_mean"]:
        u = next((u for u in r["speedups"] if u["batch"] == target and not u["bound"]), None)
        if u:
            best = dict(target=r["target"], baseline_batch=baseline, target_batch=target,
                        steps_saved=u["steps_saved"], ci=u["ci"],
                        images_spent=u["images_spent"],
                        b_crit=r["fit"]["b_crit"] if r["fit"] else None,
                        b_crit_ci=r["fit"]["b_crit_ci"] if r["fit"] else None)
    return best


def compute(study, earlier: dict) -> dict | None:
    arms = full_arms(study)
    if not arms:
        return None
    c = study.comparison
    out = {}
    for arm, pts in arms.items():
        out[arm] = analyse_arm(pts, c.baseline_batch, c.bigger_batches, study.bootstrap)
        out[arm]["headline"] = headline(out[arm], c.baseline_batch, c.target_batch)
    return out


# -- Markdown ---------------------------------------------------------------------------------
HEADLINE = ("**{ratio:g}x the batch ({baseline_batch} -> {target_batch}): steps saved to IS "
            "{target:.1f} {steps_saved:.2f}x{ci}, images spent {images_spent:.2f}x; B_crit there "
            "{b_crit}{b_crit_ci} (arm '{arm}').**")
NOISE = ("{name}'s B_simple against the B_crit interval: below at {below} of {n} targets, "
         "inside at {inside}, above at {above} (B_simple / B_crit {ratio_low:.2g} to "
         "{ratio_high:.2g}).")
CHANGE = ("B_crit from IS {first_target:.1f} to IS {last_target:.1f}: {b_crit_first:.0f} -> "
          "{b_crit_last:.0f}, {b_crit_change}. One player's B_simple is a one-player reading "
          "of a two-player game.")


def _crossing_cell(cs: list[dict]) -> str:
    reached = [c["step"] for c in cs if not c["censored"]]
    last = max(c["step"] for c in cs)
    return (f"{describe(reached).geomean:.0f}" if len(reached) == len(cs)
            else f"{len(reached)}/{len(cs)} seeds (> {last:.0f} censored)")


def _fit_cells(f: dict) -> list[str]:
    crit = {"upper": f"> {max(f['batches']) * mccandlish.GRID_SPAN:.0f} (S ~ 1/B throughout)",
            "lower": "~ 0 (S does not fall with B)"}.get(
        f["at_bound"], f"{f['b_crit']:.0f}{ci_text(f['b_crit_ci'])}")
    res = ", ".join(f"{v:+.0%}" + "*" * c for v, c in zip(f["residuals"], f["censored"]))
    return [f"{f['s_min']:.0f}{ci_text(f['s_min_ci'])}",
            f"{f['e_min']:,.0f}{ci_text(f['e_min_ci'], ',.0f')}", crit,
            f"{max(abs(v) for v in f['residuals']):.0%}", res]


def _metric_lines(metric: str, rows: list[dict], batches, baseline: int, bigger) -> list[str]:
    m = METRICS[metric]
    lines = [f"### Steps to {m.label} targets", "",
             "Generator steps at the first crossing (geometric mean over seeds; linearly "
             "interpolated between evaluations; censored: not reached by the last step):", "",
             markdown.table(["target"] + [f"batch {b}" for b in batches],
                            [[f"{m.label} {r['target']:{m.target_fmt}}"]
                             + [_crossing_cell(r["crossings"][str(b)])
                                if str(b) in r["crossings"] else "-" for b in batches]
                             for r in rows]), "",
             f"Fit S = S_min (1 + B_crit / B) per {m.label} target (least squares on log steps; "
             "95% intervals from a bootstrap over seeds; residual = measured / fitted steps - 1 "
             "per batch size, smallest batch first; * censored, a lower bound):", "",
             markdown.table(["target", "S_min (steps)", "E_min (real images)", "B_crit",
                             "largest residual", "residuals"],
                            [[f"{r['target']:{m.target_fmt}}"]
                             + (_fit_cells(r["fit"]) if r["fit"] else ["-"] * 5)
                             for r in rows]), "",
             f"From batch {baseline}, per {m.label} target: steps saved S_{baseline} / S_B "
             f"[95% bootstrap interval] and images spent E_B / E_{baseline} (perfect scaling "
             "saves B / baseline x the steps at 1x the images):", ""]
    cells = []
    for r in rows:
        by = {u["batch"]: u for u in r["speedups"]}
        row = [f"{r['target']:{m.target_fmt}}"]
        for b in bigger:
            u = by.get(b, {"bound": "?"})
            row += (["-", "-"] if u["bound"] == "?" else
                    [f"{u['bound']}{u['steps_saved']:.2f}x{ci_text(u['ci'], '.2f')}",
                     f"{u['images_spent']:.2f}x"])
        cells.append(row)
    head = ["target"] + [c for b in bigger for c in (f"{baseline} -> {b}: steps saved",
                                                     "images spent")]
    return lines + [markdown.table(head, cells), ""]


def headline_text(h: dict, arm: str) -> str:
    return HEADLINE.format(**{**h, "ci": ci_text(h["ci"], ".2f"), "b_crit": fmt(h["b_crit"]),
                              "b_crit_ci": ci_text(h["b_crit_ci"])},
                           arm=arm, ratio=h["target_batch"] / h["baseline_batch"])


def noise_text(verdict: dict) -> list[str]:
    """Each player's placement against B_crit and B_crit's change, as Markdown list items."""
    return ["- " + NOISE.format(name=name, **verdict[p]) for p, name in (("d", "D"), ("g", "G"))
            if verdict[p]["n"]] + ["- " + CHANGE.format(**verdict)]


def _noise_lines(rows: list[dict], verdict: dict | None) -> list[str]:
    def cell(n):
        return "-" if not n else f"{n['geomean']:.0f} [{n['low']:.0f}, {n['high']:.0f}]"
    table = [[f"{r['target']:.1f}",
              f"{r['fit']['b_crit']:.0f}{ci_text(r['fit']['b_crit_ci'])}"
              if r in bounded_fits(rows) else "-",
              cell(r["b_simple"].get("d")), cell(r["b_simple"].get("g"))] for r in rows]
    lines = ["### Noise scale against the critical batch", "",
             "B_simple of each player in the same runs, read where each IS target is reached "
             "(geometric mean over the points that reach it [min, max]), against the fitted "
             "B_crit:", "",
             markdown.table(["IS target", "B_crit", "B_simple D", "B_simple G"], table), ""]
    if verdict is None:
        return lines + ["No IS target has a bounded B_crit fit.", ""]
    return lines + noise_text(verdict) + [""]


def render(result: dict, study) -> str:
    c = study.comparison
    md = []
    for arm, r in result.items():
        counts = ", ".join(f"{b}: {len(s)}" for b, s in r["seeds"].items())
        md += [f"## Time to target: arm '{arm}'", "",
               f"{sum(map(len, r['seeds'].values()))} points ({r['precision']}; seeds per batch "
               f"size {counts}), lr constant, each batch size trained for its own number of "
               "steps and evaluated at a fixed cadence. McCandlish et al. 2018 (arXiv "
               "1812.06162): S = S_min (1 + B_crit / B), E = E_min (1 + B / B_crit), E counting "
               "the real images D sees (n_dis x B per step), so E_min = n_dis S_min B_crit.", ""]
        h = r["headline"]
        if h is not None:
            md += [headline_text(h, arm), ""]
        for metric, rows in r["metrics"].items():
            md += (_metric_lines(metric, rows, r["batches"], c.baseline_batch, c.bigger_batches)
                   if rows else [f"No {METRICS[metric].label} target is reached by "
                                 f"{MIN_BATCH_SIZES} batch sizes.", ""])
        md += _noise_lines(r["metrics"]["is_mean"], r["noise_scale"])
        md += [f"![{alt}]({plots.arm_figure(arm, key)})" for key, alt in plots.ARM_FIGURES]
        md.append("")
    return "\n".join(md)


def draw(result: dict, study) -> None:
    for arm, r in result.items():
        plots.time_to_target_figures(r, [p for p in study.arm(arm) if p.record.status == "done"
                                         and p.history], study.out_dir, arm)
