"""The report's time-to-target section: how many fewer steps a bigger batch buys.

Reads the arms whose sweep file sets each batch size's steps (`steps_by_batch`: runs made to
reach targets, not to stop at one budget), finds each curve's steps to IS and accuracy
targets (time_to_target.py), fits McCandlish's S = S_min (1 + B_crit / B) per target
(critical_batch_fit.py) and sets the gradient noise scale of the same runs, read where each
target is reached, against the fitted B_crit. Then the practical table (batch 64 to 128, 256,
512: steps saved, images spent) and the schedule confound: the constant-lr arm against the
decayed-lr points of the same precision at their common evaluation steps.
"""
from __future__ import annotations

import math
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from experiments import grids, sweep_files  # noqa: E402
from experiments.records import Point  # noqa: E402
from experiments.reporting.lib import mccandlish as fit_lib  # noqa: E402
from experiments.reporting.lib import seeds as summary  # noqa: E402
from experiments.reporting.lib import stats as statistics
from experiments.reporting.lib.crossings import (  # noqa: E402
    METRICS,
    crossings,
    curve_of,
    reaching_batches,
    target_grid,
)
from experiments.reporting.sections import precision as precision_check

FIGURES = {"hyperbolas": "steps_vs_images.png", "curves": "is_vs_steps.png",
           "b_crit": "b_crit_vs_target.png"}  # each prefixed with its arm's name
BASE_BATCH, BIGGER = 64, (128, 256, 512)
CONFOUND_STEP = 1000


def time_to_target_arms(sweep_dir: str) -> list[str]:
    """Arms whose sweep file sets per-batch steps (experiments.config.SweepAxes)."""
    return sorted(a for a, f in sweep_files.read_sweep_files(sweep_dir).items()
                  if a and f.time_to_target)


def split_arms(points: list[Point], arms: list[str]) -> tuple[list[Point], dict[str, list]]:
    """(points of no time-to-target arm, {arm: its finished points})."""
    rest, by_arm = [], defaultdict(list)
    for p in points:
        if p.record.arm in arms:
            if p.history or p.record.status != "done":  # a diverged probe is a result
                by_arm[p.record.arm].append(p)
        else:
            rest.append(p)
    return rest, dict(by_arm)


def _fmt(x, spec=".0f"):
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _ci(ci, spec=".0f"):
    return "" if ci is None else f" [{_fmt(ci[0], spec)}, {_fmt(ci[1], spec)}]"


def analyse_arm(points: list[Point], bootstrap: int = fit_lib.BOOTSTRAP) -> dict:
    """Per metric: targets, per-batch crossings, fits, speed-ups and B_simple at the targets."""
    curves = [curve_of(p) for p in points]
    n_dis = curves[0].n_dis
    out = {"batches": sorted({c.batch for c in curves}),
           "seeds": {str(b): sorted(c.seed for c in curves if c.batch == b)
                     for b in sorted({c.batch for c in curves})},
           "metrics": {}}
    for metric in METRICS:
        rows = []
        for target in target_grid(curves, metric):
            found = crossings(curves, metric, target)
            f = fit_lib.fit(found, n_dis, bootstrap=bootstrap)
            ups = [fit_lib.speedup(found, BASE_BATCH, b, bootstrap=bootstrap) for b in BIGGER]
            noise = {}
            for player in ("d", "g"):
                vals = [c.b_simple_at(player, c.crossing(metric, target).step) for c in curves
                        if c.crossing(metric, target).reached]
                vals = [v for v in vals if v is not None]
                noise[player] = (dict(geomean=float(np.exp(np.mean(np.log(vals)))),
                                      low=float(min(vals)), high=float(max(vals)), n=len(vals))
                                 if vals else None)
            rows.append(dict(
                target=target,
                crossings={str(b): [dict(step=c.step, censored=c.censored,
                                         before_first=c.before_first) for c in cs]
                           for b, cs in found.items()},
                reaching=reaching_batches(found),
                fit=f.to_dict() if f else None,
                speedups=[u.to_dict() for u in ups if u is not None],
                b_simple=noise))
        out["metrics"][metric] = rows
    return out


def _crossing_cell(cs: list[dict]) -> str:
    reached = [c["step"] for c in cs if not c["censored"]]
    n = len(cs)
    if len(reached) == n:
        return f"{math.exp(np.mean(np.log(reached))):.0f}"
    if not reached:
        return f"> {max(c['step'] for c in cs):.0f} (censored)"
    return f"{len(reached)}/{n} seeds (others > {max(c['step'] for c in cs if c['censored']):.0f})"


def _markdown_metric(metric: str, rows: list[dict], batches: list[int]) -> list[str]:
    name = METRICS[metric]
    spec = ".1f" if metric == "is_mean" else ".2f"
    lines = [f"### Steps to {name} targets", "",
             "Generator steps at the first crossing (geometric mean over seeds; linearly "
             "interpolated between evaluations; '>' censored: not reached by the last step):", "",
             "| target | " + " | ".join(f"batch {b}" for b in batches) + " |",
             "|---|" + "---|" * len(batches)]
    for r in rows:
        cells = [_crossing_cell(r["crossings"][str(b)]) if str(b) in r["crossings"] else "-"
                 for b in batches]
        lines.append(f"| {name} {format(r['target'], spec)} | " + " | ".join(cells) + " |")
    lines += ["", f"Fit S = S_min (1 + B_crit / B) per {name} target (least squares on log "
              "steps; 95% intervals from a bootstrap over seeds; residual = measured / fitted "
              "steps - 1 per batch size, smallest batch first):", "",
              "| target | S_min (steps) | E_min (real images) | B_crit | largest residual | "
              "residuals |", "|---|---|---|---|---|---|"]
    for r in rows:
        f = r["fit"]
        if f is None:
            lines.append(f"| {format(r['target'], spec)} | fewer than 3 batch sizes reach it "
                         "| | | | |")
            continue
        crit = f"{f['b_crit']:.0f}{_ci(f['b_crit_ci'])}"
        if f["at_bound"] == "upper":
            crit = f"> {max(f['batches']) * fit_lib.GRID_SPAN:.0f} (S ~ 1/B throughout)"
        elif f["at_bound"] == "lower":
            crit = "~ 0 (S does not fall with B)"
        res = ", ".join(f"{v:+.0%}" + ("*" if c else "")
                        for v, c in zip(f["residuals"], f["censored"]))
        lines.append(f"| {format(r['target'], spec)} | {f['s_min']:.0f}{_ci(f['s_min_ci'])} | "
                     f"{f['e_min']:,.0f}{_ci(f['e_min_ci'], ',.0f')} | {crit} | "
                     f"{max(abs(v) for v in f['residuals']):.0%} | {res} |")
    lines += ["", "(* a censored batch size: its steps are a lower bound.)", ""]
    return lines


def _practical(rows: list[dict], metric: str) -> list[str]:
    spec = ".1f" if metric == "is_mean" else ".2f"
    lines = [f"Going from batch {BASE_BATCH} to a bigger batch, per {METRICS[metric]} target: "
             f"steps saved S_{BASE_BATCH} / S_B [95% bootstrap interval] and images spent "
             f"E_B / E_{BASE_BATCH}; perfect scaling would save 2x, 4x and 8x the steps at "
             "1x the images.", "",
             "| target | " + " | ".join(f"{BASE_BATCH} -> {b}: steps saved | images spent"
                                      for b in BIGGER) + " |",
             "|---|" + "---|---|" * len(BIGGER)]
    for r in rows:
        by = {u["batch"]: u for u in r["speedups"]}
        cells = []
        for b in BIGGER:
            u = by.get(b)
            if u is None or u["bound"] == "?":
                cells += ["-", "-"]
                continue
            ci = "" if not u["ci"] else f" [{u['ci'][0]:.2f}, {u['ci'][1]:.2f}]"
            cells += [f"{u['bound']}{u['steps_saved']:.2f}x{ci}", f"{u['images_spent']:.2f}x"]
        lines.append(f"| {format(r['target'], spec)} | " + " | ".join(cells) + " |")
    return lines + [""]


def _noise_lines(rows: list[dict]) -> list[str]:
    lines = ["B_simple of each player in the same runs, read where each IS target is reached "
             "(geometric mean over the points that reach it [min, max]), against the fitted "
             "B_crit:", "", "| IS target | B_crit | B_simple D | B_simple G |", "|---|---|---|---|"]
    for r in rows:
        f = r["fit"]
        cells = []
        for p in ("d", "g"):
            n = r["b_simple"].get(p)
            cells.append("-" if not n else f"{n['geomean']:.0f} [{n['low']:.0f}, {n['high']:.0f}]")
        crit = "-" if not f or f["at_bound"] else f"{f['b_crit']:.0f}{_ci(f['b_crit_ci'])}"
        lines.append(f"| {r['target']:.1f} | {crit} | {cells[0]} | {cells[1]} |")
    return lines + ["", noise_verdict(rows), ""]


def coupling_lines(sweep_dir: str) -> list[str]:
    """The estimator's coupling (shared batch statistics between its small batches), from
    noise-scale runs saved in SWEEP/noise_scale/coupling/: one line per run."""
    lines = []
    for name, run in sweep_files.read_noise_scale_runs(sweep_dir, "coupling"):
        ns = run.noise_scale
        if ns is None:
            continue
        cells = [f"{label} {e.b_simple:.0f} [{e.ci_low:.0f}, {e.ci_high:.0f}]"
                 for e, label in ((ns.d, "D"), (ns.g, "G"))]
        lines.append(f"- {name}: batch {run.global_batch_size}, {run.steps} steps, small "
                     f"batches from {ns.source}, BN statistics "
                     f"{'shared' if run.bn_cross_replica else 'per replica'}: B_simple "
                     f"{', '.join(cells)}.")
    if not lines:
        return []
    return ["The estimator's coupling (its small batches share batch-norm statistics): "
            "B_simple with shared against independent statistics, from short runs:", "",
            *lines, ""]


def noise_verdict(rows: list[dict]) -> str:
    """Which player's B_simple, if either, falls inside the B_crit intervals; whether both
    grow with the target."""
    fitted = [r for r in rows if r["fit"] and not r["fit"]["at_bound"] and r["fit"]["b_crit_ci"]]
    if not fitted:
        return "No target has a bounded B_crit fit, so the noise scale cannot be tested here."
    parts = []
    for p, name in (("d", "D"), ("g", "G")):
        pairs = [(r, r["b_simple"][p]) for r in fitted if r["b_simple"].get(p)]
        if not pairs:  # not "inside at 0 of 0 targets"
            parts.append(f"{name}'s B_simple has no reading at the fitted targets")
            continue
        inside = sum(r["fit"]["b_crit_ci"][0] <= n["geomean"] <= r["fit"]["b_crit_ci"][1]
                     for r, n in pairs)
        ratios = [n["geomean"] / r["fit"]["b_crit"] for r, n in pairs]
        low, high = f"{min(ratios):.2g}", f"{max(ratios):.2g}"
        span = low if low == high else f"from {low} to {high}"
        parts.append(f"{name}'s B_simple lies inside the B_crit interval at {inside} of "
                     f"{len(pairs)} target{'s' * (len(pairs) > 1)} (B_simple / B_crit {span})")
    crit = [r["fit"]["b_crit"] for r in fitted]
    if len(crit) == 1:  # one fitted target: no trend to read, not "does not grow"
        return (f"{'; '.join(parts)}. One target has a bounded B_crit fit ({crit[0]:.0f}), so "
                "whether B_crit and B_simple grow with the target cannot be read here. One "
                "player's B_simple is a one-player reading of a two-player game.")
    grow = "grows" if crit[-1] > crit[0] else "does not grow"
    noise_g = [r["b_simple"]["g"]["geomean"] for r in fitted if r["b_simple"].get("g")]
    noise_d = [r["b_simple"]["d"]["geomean"] for r in fitted if r["b_simple"].get("d")]

    def trend(v):
        if len(v) < 2:
            return "has fewer than two readings"
        return "grows" if v[-1] > v[0] else "does not grow"
    return (f"{'; '.join(parts)}. From the lowest to the highest target the fitted B_crit "
            f"{grow} ({crit[0]:.0f} -> {crit[-1]:.0f}); B_simple of D {trend(noise_d)} and of "
            f"G {trend(noise_g)} (the paper reports both B_crit and B_noise growing as "
            "training proceeds). One player's B_simple is a one-player reading of a "
            "two-player game.")


def schedule_confound(arm_points: list[Point], others: list[Point]) -> dict | None:
    """The constant-lr arm against decayed-lr equal-steps points of its precision, at batch 64
    and 512: the step-1,000 ratio per batch, and the 512-vs-64 IS ratio per common step."""
    precision = precision_check.precision_of(arm_points[0])
    decayed = [p for p in others if p.record.status == "done" and p.history
               and precision_check.precision_of(p) == precision
               and p.config.train.lr_decay_start is not None
               and summary.budget(p.record) == summary.EQUAL_STEPS
               and p.config.train.steps == CONFOUND_STEP]
    if not decayed:
        return None

    def at(points, batch, step):
        vals = [e.is_mean for p in points if p.record.global_batch_size == batch
                for e in p.history if e.step == step and e.is_mean and e.is_mean > 0]
        return vals

    out = {"precision": precision, "at_step": {}, "ratio_512_64": {},
           "decay_starts": sorted({p.config.train.lr_decay_start for p in decayed})}
    for b in (BASE_BATCH, 512):
        a, c = at(decayed, b, CONFOUND_STEP), at(arm_points, b, CONFOUND_STEP)
        if a and c:
            out["at_step"][str(b)] = dict(decayed=a, constant=c,
                                          ratio=statistics.welch_ratio(a, c).to_dict())
    for name, pts in (("decayed", decayed), ("constant", arm_points)):
        steps = sorted({e.step for p in pts for e in p.history})
        series = {}
        for s in steps:
            lo, hi = at(pts, BASE_BATCH, s), at(pts, 512, s)
            if lo and hi:
                series[str(s)] = statistics.welch_ratio(lo, hi).to_dict()
        out["ratio_512_64"][name] = series
    return out


def _confound_lines(conf: dict | None, arm: str) -> list[str]:
    if conf is None:
        return ["No decayed-lr points of the same precision to compare the schedule with.", ""]
    # no batch evaluated at the step in both schedules: said, not a colon with nothing after
    lines = [f"### The schedule confound ({conf['precision']})", "",
             f"IS at step {CONFOUND_STEP}: the decayed-lr points (lr linearly to 0 from step "
             f"{'/'.join(str(d) for d in conf['decay_starts'])}) "
             f"against the '{arm}' arm (lr constant), same precision"
             + (":" if conf["at_step"] else f"; no batch size has IS at step {CONFOUND_STEP} "
                "in both."), ""]

    def seeds(values):
        return f"{len(values)} seed{'s' * (len(values) > 1)}"
    for b, d in conf["at_step"].items():
        r = d["ratio"]
        # one seed on a side has no interval: said, not "[-, -]"
        ci = (f" [{_fmt(r['low'], '.3f')}, {_fmt(r['high'], '.3f')}]" if math.isfinite(r["low"])
              else " (no interval: one seed on a side)")
        lines.append(f"- batch {b}: decayed {np.mean(d['decayed']):.2f} "
                     f"({seeds(d['decayed'])}), constant {np.mean(d['constant']):.2f} "
                     f"({seeds(d['constant'])}): constant / decayed {r['ratio']:.3f}{ci}.")
    steps = sorted({int(s) for d in conf["ratio_512_64"].values() for s in d})
    if not steps:
        return lines + ["", f"No evaluation step has IS at both batch {BASE_BATCH} and batch "
                        "512 in either schedule.", ""]
    lines += ["", "IS ratio batch 512 / batch 64 at each evaluation step (geometric means, "
              "Welch 95% interval):", "", "| step | decayed lr | constant lr |", "|---|---|---|"]
    for s in steps:
        cells = []
        for name in ("decayed", "constant"):
            r = conf["ratio_512_64"][name].get(str(s))
            cells.append("-" if r is None else
                         f"{r['ratio']:.2f} [{_fmt(r['low'], '.2f')}, {_fmt(r['high'], '.2f')}]")
        lines.append(f"| {s} | {cells[0]} | {cells[1]} |")
    return lines + [""]


def _bars(centres, intervals) -> np.ndarray:
    """Error-bar lengths (2 x n); a percentile interval may miss its centre: no negative bar."""
    return np.array([[max(c - lo, 0.0), max(hi - c, 0.0)]
                     for c, (lo, hi) in zip(centres, intervals)]).T


def figure_name(arm: str, key: str) -> str:
    return f"{arm}_{FIGURES[key]}"


def _finish(fig, ax, path: str) -> None:
    """The look the three figures share, then saved (PNG and PDF) and closed."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    grids.save_figure(fig, path)


def figures(result: dict, points: list[Point], out_dir: str, arm: str) -> None:
    """S vs E per IS target with the fitted hyperbolas; IS vs steps with seed bands; B_crit
    and B_simple vs target."""
    rows = result["metrics"]["is_mean"]
    cmap = plt.get_cmap("plasma")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, r in enumerate(rows):
        color = cmap(i / max(len(rows) - 1, 1))
        for b, cs in r["crossings"].items():
            for c in cs:
                e = result["n_dis"] * int(b) * c["step"]
                ax.scatter(e, c["step"], color=color, s=10, marker="^" if c["censored"] else "o")
        f = r["fit"]
        if f:
            bs = np.geomspace(min(result["batches"]) / 2, max(result["batches"]) * 2, 100)
            s = f["s_min"] * (1 + f["b_crit"] / bs)
            ax.plot(result["n_dis"] * bs * s, s, color=color, label=f"IS {r['target']:.1f}")
    ax.set(xscale="log", yscale="log", xlabel="real images seen by D (E)",
           ylabel="generator steps (S)", title="steps vs images to each IS target")
    _finish(fig, ax, os.path.join(out_dir, figure_name(arm, "hyperbolas")))

    fig, ax = plt.subplots(figsize=(6, 4))
    by_batch = defaultdict(list)
    for p in points:
        by_batch[p.record.global_batch_size].append(p)
    vir = plt.get_cmap("viridis")
    for i, b in enumerate(sorted(by_batch)):
        steps = sorted(set.intersection(*[{e.step for e in p.history} for p in by_batch[b]]))
        vals = np.array([[next(e.is_mean for e in p.history if e.step == s) for s in steps]
                         for p in by_batch[b]])
        color = vir(i / max(len(by_batch) - 1, 1))
        ax.plot(steps, vals.mean(0), color=color, label=f"batch {b} ({len(vals)} seeds)")
        ax.fill_between(steps, vals.min(0), vals.max(0), color=color, alpha=0.2)
    ax.set(xscale="log", xlabel="generator steps", ylabel="IS",
           title="IS at constant lr (band: seeds' range)")
    _finish(fig, ax, os.path.join(out_dir, figure_name(arm, "curves")))

    fig, ax = plt.subplots(figsize=(5.5, 4))
    t = [r["target"] for r in rows if r["fit"] and not r["fit"]["at_bound"]]
    fits = [r["fit"] for r in rows if r["fit"] and not r["fit"]["at_bound"]]
    if fits:
        ax.errorbar(t, [f["b_crit"] for f in fits],
                    yerr=_bars([f["b_crit"] for f in fits],
                               [f["b_crit_ci"] or (f["b_crit"], f["b_crit"]) for f in fits]),
                    marker="o", color="k", capsize=3, label="B_crit (fit)")
    for p, color in (("d", "tab:blue"), ("g", "tab:orange")):
        pts = [(r["target"], r["b_simple"][p]) for r in rows if r["b_simple"].get(p)]
        if pts:
            ax.errorbar([x for x, _ in pts], [n["geomean"] for _, n in pts],
                        yerr=_bars([n["geomean"] for _, n in pts],
                                   [(n["low"], n["high"]) for _, n in pts]), marker="s",
                        color=color,
                        capsize=3, label=f"B_simple {p.upper()}")
    ax.set(yscale="log", xlabel="IS target", ylabel="batch size",
           title="critical batch and noise scale vs target")
    _finish(fig, ax, os.path.join(out_dir, figure_name(arm, "b_crit")))


def headline(result: dict) -> str:
    """'8x the batch buys N x fewer steps to IS T [interval]; B_crit ...' at the highest IS
    target whose 64 -> 512 saving is measured."""
    rows = result["metrics"]["is_mean"]
    best = None
    for r in rows:
        u = next((u for u in r["speedups"] if u["batch"] == 512 and not u["bound"]), None)
        if u:
            best = (r, u)
    if best is None:
        return "No IS target is reached by both batch 64 and batch 512 with every seed."
    r, u = best
    f = r["fit"]
    saved, ci = u["steps_saved"], u["ci"]
    if saved >= 1:
        buys = f"buys {saved:.2f}x fewer steps"
    else:  # not "0.80x fewer": the bigger batch needed more steps
        buys, ci = f"needs {1 / saved:.2f}x more steps", ci and (1 / ci[1], 1 / ci[0])
    ci = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    text = (f"8x the batch (64 -> 512) {buys} to IS {r['target']:.1f}{ci}, spending "
            f"{u['images_spent']:.2f}x the images")
    if f and not f["at_bound"]:
        # the span's ends are the first and last fitted targets, not rows[0] and rows[-1]
        fitted = [x for x in rows if x["fit"] and not x["fit"]["at_bound"]]
        text += f"; the measured critical batch there is {f['b_crit']:.0f}{_ci(f['b_crit_ci'])}"
        if len(fitted) > 1:
            lo, hi = fitted[0], fitted[-1]
            text += (f", from {lo['fit']['b_crit']:.0f} at IS {lo['target']:.1f} to "
                     f"{hi['fit']['b_crit']:.0f} at IS {hi['target']:.1f}")
    return text + "."


def probe(probe_points: list[Point], main: dict, main_points: list[Point]) -> dict:
    """A probe arm (fewer than 3 batch sizes, e.g. batch 512 at another lr) against the main
    time-to-target arm at the same batch: steps to each IS target of the main arm's grid, and
    any divergence (a result, not hidden)."""
    out = {"points": [], "targets": []}
    for p in probe_points:
        t = p.config.train
        out["points"].append(dict(point=os.path.basename(p.dir), batch=t.global_batch_size,
                                  seed=t.seed, g_lr=t.g_lr, d_lr=t.d_lr,
                                  status=p.record.status, diverged_at=p.record.diverged_at,
                                  final_is=p.record.final.is_mean if p.record.final else None))
    done = [p for p in probe_points if p.history]
    if not done:
        return out
    curves = [curve_of(p) for p in done]
    batches = sorted({c.batch for c in curves})
    twins = [curve_of(p) for p in main_points if p.record.global_batch_size in batches]
    for r in main["metrics"]["is_mean"]:
        target = r["target"]
        mine = crossings(curves, "is_mean", target)
        theirs = crossings(twins, "is_mean", target)
        for b in batches:
            cs, ts = mine.get(b, []), theirs.get(b, [])
            if cs and ts:
                s = fit_lib.speedup({1: ts, 2: cs}, 1, 2, bootstrap=0)
                out["targets"].append(dict(
                    target=target, batch=b, probe=[c.step for c in cs],
                    probe_censored=[c.censored for c in cs], main=[c.step for c in ts],
                    main_censored=[c.censored for c in ts], steps_saved=s.steps_saved,
                    bound=s.bound))
    return out


def _probe_lines(arm: str, main_arm: str, res: dict) -> list[str]:
    lines = [f"### Probe arm '{arm}' against '{main_arm}'", ""]
    for p in res["points"]:
        state = (f"diverged at step {p['diverged_at']}" if p["status"] != "done"
                 else f"final IS {_fmt(p['final_is'], '.2f')}")
        lines.append(f"- {p['point']}: batch {p['batch']}, G lr {p['g_lr']:.3g}, D lr "
                     f"{p['d_lr']:.3g}, {state}.")
    if res["targets"]:
        lines += ["", f"Steps to each IS target at the same batch (geometric mean over seeds; "
                  f"'>' censored): {main_arm} vs {arm}, and the steps saved by {arm}:", "",
                  f"| IS target | batch | {main_arm} | {arm} | saved |", "|---|---|---|---|---|"]
        for t in res["targets"]:
            def cell(steps, cens):
                g = math.exp(np.mean(np.log(steps)))
                return f"{'> ' if any(cens) else ''}{g:.0f}"
            saved = "?" if t["bound"] == "?" else f"{t['bound']}{t['steps_saved']:.2f}x"
            lines.append(f"| {t['target']:.1f} | {t['batch']} | "
                         f"{cell(t['main'], t['main_censored'])} | "
                         f"{cell(t['probe'], t['probe_censored'])} | {saved} |")
    return lines + [""]


def section(sweep_dir: str, points: list[Point], out_dir: str,
            bootstrap: int = fit_lib.BOOTSTRAP) -> tuple[str, dict]:
    """(the Markdown section, its results) for each time-to-target arm; ('', {}) without one."""
    arms = time_to_target_arms(sweep_dir)
    rest, by_arm = split_arms(points, arms)
    if not by_arm:
        return "", {}
    md, results = [], {}
    full = {a: pts for a, pts in by_arm.items()
            if len({p.record.global_batch_size for p in pts if p.history}) >= 3}
    for arm, pts in sorted(full.items()):
        pts = [p for p in pts if p.record.status == "done" and p.history]
        result = analyse_arm(pts, bootstrap)
        result["n_dis"] = pts[0].config.train.n_dis
        result["precision"] = precision_check.precision_of(pts[0])
        result["schedule_confound"] = schedule_confound(pts, rest)
        result["headline"] = headline(result)
        results[arm] = result
        figures(result, pts, out_dir, arm)
        counts = ", ".join(f"{b}: {len(s)}" for b, s in result["seeds"].items())
        md += [f"## Time to target: arm '{arm}'", "",
               f"{len(pts)} points ({result['precision']}; seeds per batch size {counts}), lr "
               f"constant, each batch size trained for its own number of steps and evaluated "
               f"at a fixed cadence. McCandlish et al. 2018 (arXiv 1812.06162): S = S_min "
               f"(1 + B_crit / B), E = E_min (1 + B / B_crit), E counting the real images D "
               f"sees (n_dis x B per step), so E_min = n_dis S_min B_crit.", "",
               f"**{result['headline']}**", ""]
        for metric in METRICS:
            rows = result["metrics"][metric]
            if not rows:
                md += [f"No {METRICS[metric]} target is reached by 3 batch sizes.", ""]
                continue
            md += _markdown_metric(metric, rows, result["batches"])
            md += _practical(rows, metric)
        md += ["### Noise scale against the critical batch", ""]
        md += _noise_lines(result["metrics"]["is_mean"])
        md += coupling_lines(sweep_dir)
        md += _confound_lines(result["schedule_confound"], arm)
        for key, alt in (("hyperbolas", "steps vs images"), ("curves", "IS vs steps"),
                         ("b_crit", "B_crit vs target")):
            md.append(f"![{alt}]({figure_name(arm, key)})")
        md.append("")
    main_arm = next(iter(sorted(full)), None)
    for arm, pts in sorted(by_arm.items()):
        if arm in full:
            continue
        if main_arm is None:
            sizes = sorted({p.record.global_batch_size for p in pts})
            at = f"batch size{'s' * (len(sizes) > 1)} {', '.join(map(str, sizes))}"
            md += [f"## Time to target: arm '{arm}'", "",
                   f"{len(pts)} finished point(s) at {at}: steps to target are "
                   "fitted once 3 or more batch sizes are in (an arm of fewer is compared with "
                   "such an arm at its own batch size).", ""]
            continue
        res = probe(pts, results[main_arm], full[main_arm])
        results[arm] = res
        md += _probe_lines(arm, main_arm, res)
    return "\n".join(md), results
