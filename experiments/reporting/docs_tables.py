"""The README's and docs/study.md's results tables and fixed-template sentences, each rendered
from the committed report's summary.json and analysis.json alone (load() in build_docs.py), so
that the docs do not depend on how the reporting sections are built."""
from __future__ import annotations

import math

from experiments.reporting.lib import markdown

ARM = "constant_lr"  # the committed study's headline time-to-target arm
LABELS = {"is": "IS", "fid": "FID", "acc": "conditional accuracy"}


def _pm(v, digits=2, sd=None) -> str:
    return "-" if v is None else f"{v:.{digits}f}" + ("" if sd is None else f" ± {sd:.{digits}f}")


def _vs(row: dict, metric: str, base: int) -> str:
    """'+12.3% [+1.0, +25.1] df 3.6': the change vs the baseline batch, its 95% Welch interval."""
    change, ci = row[f"{metric}_change_vs_baseline"], row[f"{metric}_ratio_ci"]
    if row["batch"] == base or change is None:
        return "baseline" if row["batch"] == base else "-"
    return (f"{change:+.1f}% [{100 * (ci['low'] - 1):+.1f}, {100 * (ci['high'] - 1):+.1f}] "
            f"df {ci['df']:.1f}")


def batch_table(report: dict, short: bool = False) -> str:
    base = report["analysis.json"]["verdicts"]["baseline_batch"]
    vs = [f"{LABELS.get(m, m)} vs {base} [95% CI]".replace("conditional ", "")
          for m in ("is", "fid", "acc")]
    if short:  # the README's: FID in whole numbers
        return markdown.table(["batch", "IS", "FID", "accuracy", *vs], [
            [str(r["batch"]), _pm(r["is_mean"], 2, r["is_std"]), _pm(r["fid"], 0, r["fid_std"]),
             _pm(r["acc"], 3, r["acc_std"]), *(_vs(r, m, base) for m in ("is", "fid", "acc"))]
            for r in report["summary.json"]])
    head = ["batch", "seeds", "IS", "FID", "KID", "accuracy", "intra-FID", "precision / recall",
            "best IS*", "best FID*", *vs, "steps", "images seen", "wall time (min)", "diverged"]
    return markdown.table(head, [
        [str(r["batch"]), str(r["seeds"]), _pm(r["is_mean"], 2, r["is_std"]),
         _pm(r["fid"], 2, r["fid_std"]), f"{r['kid']:.3g} ± {r['kid_std']:.2g}",
         _pm(r["acc"], 3, r["acc_std"]), _pm(r["intra_fid"], 1),
         f"{r['precision']:.2f} / {r['recall']:.2f}", _pm(r["best_is"]), _pm(r["best_fid"]),
         *(_vs(r, m, base) for m in ("is", "fid", "acc")), str(r["steps"]),
         f"{r['images_seen']:,}", f"{r['wall_time_s'] / 60:.1f}", str(r["diverged"])]
        for r in report["summary.json"]])


def bn_modes(report: dict) -> str:
    return markdown.table(["batch", "mode", "seeds", "IS", "FID", "accuracy"], [
        [str(r["batch"]), mode, str(m["seeds"]), _pm(m["is_mean"]), _pm(m["fid"]),
         _pm(m["acc"], 3)]
        for r in report["summary.json"] for mode, m in sorted(r["other_bn_modes"].items())])


def _geomean(values) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _ci(ci, spec=".0f") -> str:
    return f" [{ci[0]:{spec}}, {ci[1]:{spec}}]"


def headline(report: dict) -> str:
    h = report["analysis.json"]["time_to_target"][ARM]["headline"]
    return (f"**{h['target_batch'] / h['baseline_batch']:g}x the batch ({h['baseline_batch']} -> "
            f"{h['target_batch']}): steps saved to IS {h['target']:.1f} {h['steps_saved']:.2f}x"
            f"{_ci(h['ci'], '.2f')}, images spent {h['images_spent']:.2f}x; B_crit there "
            f"{h['b_crit']:.0f}{_ci(h['b_crit_ci'])} (arm '{ARM}').**")


def time_to_target(report: dict) -> str:
    """Whole IS targets from 4: steps at the smallest, baseline and two biggest batches,
    B_crit, and the steps saved and images spent from the baseline to the two biggest."""
    r = report["analysis.json"]["time_to_target"][ARM]
    base = r["headline"]["baseline_batch"]
    bigger = sorted(u["batch"] for u in r["metrics"]["is_mean"][0]["speedups"])[1:]
    shown = [min(r["batches"]), base, *bigger]
    head = ["IS target", "steps at " + " / ".join(map(str, shown)), "B_crit [95% bootstrap]"]
    for b in bigger:
        head += [f"{base} -> {b}: steps saved", "images spent"]
    cells = []
    for t in r["metrics"]["is_mean"]:
        if t["target"] != int(t["target"]) or t["target"] < 4:
            continue
        ups = {u["batch"]: u for u in t["speedups"]}
        steps = [_geomean([x["step"] for x in t["crossings"][str(b)]]) for b in shown]
        row = [f"{t['target']:.1f}", " / ".join(f"{s:,.0f}" for s in steps),
               f"{t['fit']['b_crit']:.0f}{_ci(t['fit']['b_crit_ci'])}"]
        for b in bigger:
            row += [f"{ups[b]['steps_saved']:.2f}x{_ci(ups[b]['ci'], '.2f')}",
                    f"{ups[b]['images_spent']:.2f}x"]
        cells.append(row)
    return markdown.table(head, cells)


def b_crit_by_target(report: dict) -> str:
    """Every IS target: the fitted B_crit and each player's B_simple where it is reached."""
    def b_simple(n):
        return f"{n['geomean']:.0f} [{n['low']:.0f}, {n['high']:.0f}]"
    return markdown.table(
        ["IS target", "B_crit [95% bootstrap]", "B_simple D [min, max]", "B_simple G [min, max]"],
        [[f"{t['target']:.1f}", f"{t['fit']['b_crit']:.0f}{_ci(t['fit']['b_crit_ci'])}",
          b_simple(t["b_simple"]["d"]), b_simple(t["b_simple"]["g"])]
         for t in report["analysis.json"]["time_to_target"][ARM]["metrics"]["is_mean"]])


NOISE = ("- {name}'s B_simple against the B_crit interval: below at {below} of {n} targets, "
         "inside at {inside}, above at {above} (B_simple / B_crit {ratio_low:.2g} to "
         "{ratio_high:.2g}).")
CHANGE = ("- B_crit from IS {first_target:.1f} to IS {last_target:.1f}: {b_crit_first:.0f} -> "
          "{b_crit_last:.0f}, {b_crit_change}. One player's B_simple is a one-player reading "
          "of a two-player game.")


def noise_scale(report: dict) -> str:
    v = report["analysis.json"]["time_to_target"][ARM]["noise_scale"]
    return "\n".join([NOISE.format(name="D", **v["d"]), NOISE.format(name="G", **v["g"]),
                      CHANGE.format(**v)])


def lr_probe(report: dict) -> str:
    p = report["analysis.json"]["probes"]["lr_probe"]
    return markdown.table(
        ["IS target", "batch", f"steps, arm {p['against']}", "steps, arm lr_probe", "saved"],
        [[f"{t['target']:.1f}", str(t["batch"]), f"{_geomean(t['main']):,.0f}",
          f"{_geomean(t['probe']):,.0f}", f"{t['steps_saved']:.2f}x"] for t in p["targets"]])


def schedule(report: dict) -> str:
    """The target / baseline IS ratio at equal steps, every 200 steps, in both lr designs."""
    r = report["analysis.json"]["schedule_confound"]["ratio_target_to_baseline"]
    steps = sorted({int(s) for design in r.values() for s in design if int(s) % 200 == 0})
    def cell(design, step):
        x = r[design].get(str(step))
        return "-" if x is None else f"{x['ratio']:.2f}{_ci([x['low'], x['high']], '.2f')}"
    return markdown.table(["step", "lr decayed from step 500", "lr constant"],
                          [[f"{s:,}", cell("decayed", s), cell("constant", s)] for s in steps])


def precision(report: dict) -> str:
    digits = {"is": 3, "fid": 1, "acc": 3}
    rows = sorted(report["analysis.json"]["precision_check"],
                  key=lambda c: (c["batch"], list(digits).index(c["metric"])))
    return markdown.table(
        ["batch", "metric", "float32", "bfloat16", "ratio [95% CI]", "beyond the seed spread"],
        [[str(c["batch"]), LABELS[c["metric"]],
          _pm(c["float32_mean"], digits[c["metric"]], c["float32_sd"]),
          _pm(c["mean"], digits[c["metric"]], c["sd"]),
          f"{c['interval']['ratio']:.3f}{_ci([c['interval'][k] for k in ('low', 'high')], '.3f')}",
          "yes" if c["beyond_seed_spread"] else "no"] for c in rows])


def plateau(report: dict) -> str:
    """Per batch and budget: the curves whose IS moved by more than the seed spread over the
    last evaluation interval (not flattened), up or down."""
    def moved(p, sign):
        return sum(not c["flattened"] and c["is_change"] * sign > 0 for c in p["curves"])
    return markdown.table(
        ["batch", "budget", "last interval (steps)", "curves", "rose by more than the seed spread",
         "fell by more"],
        [[str(p["batch"]), p["budget"].replace("_", " "),
          f"{p['curves'][0]['from_step']:,} -> {p['curves'][0]['to_step']:,}",
          str(len(p["curves"])), str(moved(p, 1)), str(moved(p, -1))]
         for p in sorted(report["analysis.json"]["verdicts"]["plateau"],
                         key=lambda p: (p["budget"] != "equal_steps", p["batch"]))])


def equal_images_arms(report: dict) -> str:
    """The README's: baseline and target at equal steps, and the baseline given equal images."""
    steps, images = ({c["name"]: c for c in report["analysis.json"]["verdicts"]["comparisons"]}[n]
                     for n in ("equal_steps", "equal_images"))
    arms = [steps["baseline"], images["baseline"], images["target"]]
    return markdown.table(["arm", "images seen", "IS", "accuracy"], [
        [f"batch {a['batch']} x {a['steps']:,} steps", f"{a['images_seen']:,}",
         f"{a['is']['mean']:.2f}", f"{100 * a['acc']['mean']:.0f}%"] for a in arms])


TABLES = {"batch_table": batch_table, "batch_table_short": lambda r: batch_table(r, short=True),
          "bn_modes": bn_modes, "headline": headline, "time_to_target": time_to_target,
          "b_crit_by_target": b_crit_by_target, "noise_scale": noise_scale, "lr_probe": lr_probe,
          "schedule": schedule, "precision": precision, "plateau": plateau,
          "equal_images_arms": equal_images_arms}
