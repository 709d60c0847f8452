"""Renders the committed report's numbers into README.md and docs/study.md.

    python -m experiments.reporting.build_docs [--check]

The two files are prose written by a person around generated blocks between
`<!-- results: NAME -->` and `<!-- /results: NAME -->` (common/marked_blocks.py, as
docs/benchmarks.md's). Every block is rendered from results/fashion_mnist/report/summary.json
and analysis.json alone, not through the reporting sections (which may change shape): tables,
sentences from fixed templates, and key-number tables that name each number's source key.
--check exits 1 if a block is not what the committed report renders to.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from typing import NamedTuple

from common import files, marked_blocks
from experiments.reporting.lib import markdown

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "results", "fashion_mnist", "report")
DOCS = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "study.md")]
TAG = "results"
A, S = "analysis.json ", "summary.json "  # the files a source key names
ARM = "constant_lr"  # the committed study's headline time-to-target arm
LABELS = {"is": "IS", "fid": "FID", "acc": "conditional accuracy"}


def load(report_dir: str = REPORT) -> dict:
    """{'summary.json': its rows, 'analysis.json': its analysis}: what a source key names."""
    out = {}
    for name in ("summary.json", "analysis.json"):
        with open(os.path.join(report_dir, name)) as f:
            out[name] = json.load(f)
    return out


def lookup(report: dict, key: str):
    """The value a source key names: 'analysis.json PATH' or 'summary.json PATH', PATH dotted
    names with list selectors: [2] (by index), [k=v,k2=v2] (the one entry with those fields),
    [k>=v] (every entry whose k is at least v: a list, the rest of PATH read in each)."""
    source, path = key.split(" ", 1)
    steps = [s for s in re.findall(r"([^.\[\]]*)(?:\[([^\]]+)\])?\.?", path) if any(s)]
    return _walk(report[source], steps, key)


def _walk(data, steps, key):
    for i, (name, selector) in enumerate(steps):
        data = data[name] if name else data
        if selector.isdigit():
            data = data[int(selector)]
        elif ">=" in selector:
            field, least = selector.split(">=")
            return [_walk(row, steps[i + 1:], key) for row in data if row[field] >= float(least)]
        elif selector:
            wanted = dict(pair.split("=", 1) for pair in selector.split(","))
            found = [row for row in data if all(str(row.get(k)) == v for k, v in wanted.items())]
            if len(found) != 1:
                raise KeyError(f"{key}: {len(found)} entries have [{selector}]")
            data = found[0]
    return data


SCALE = {None: lambda v: v, "change": lambda v: 100 * (v - 1), "%": lambda v: 100 * v}


def show(value, spec: str = "{}", scale: str | None = None) -> str:
    """A value as printed: `spec` a format ('p': a p-value), `scale` 'change' (a ratio as a %
    change) or '%'; a list (a [k>=v] key) as its range."""
    if isinstance(value, list):
        return f"{show(min(value), spec, scale)} to {show(max(value), spec, scale)}"
    if value is None or isinstance(value, (str, bool)):
        return "-" if value is None else str(value)
    value = SCALE[scale](value)
    if spec == "p":
        spec = "{:.2g}" if value >= 1e-4 else "{:.1e}"
    return spec.format(value)


class Key(NamedTuple):
    """A key-number row: what the number is, its source key, how it is printed and the key of
    its 95% interval ([low, high], {low, high} or {ci_low, ci_high})."""
    quantity: str
    key: str
    spec: str = "{}"
    ci: str | None = None
    scale: str | None = None


def key_table(report: dict, keys: list[Key]) -> str:
    rows = []
    for k in keys:
        ci = lookup(report, k.ci) if k.ci else None
        if isinstance(ci, dict):  # an interval's {low, high} or an estimate's {ci_low, ci_high}
            ci = [ci.get("low", ci.get("ci_low")), ci.get("high", ci.get("ci_high"))]
        low, high = ci or (None, None)
        interval = f"[{show(low, k.spec, k.scale)}, {show(high, k.spec, k.scale)}]" if ci else ""
        rows.append([k.quantity, show(lookup(report, k.key), k.spec, k.scale), interval,
                     f"`{k.key.removeprefix(A)}`"])
    return markdown.table(["quantity", "value", "95% interval", "key (analysis.json unless named)"],
                          rows)


# ---- tables and fixed templates ------------------------------------------------------------

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
    steps, images = (lookup(report, f"{A}verdicts.comparisons[name={name}]")
                     for name in ("equal_steps", "equal_images"))
    arms = [steps["baseline"], images["baseline"], images["target"]]
    return markdown.table(["arm", "images seen", "IS", "accuracy"], [
        [f"batch {a['batch']} x {a['steps']:,} steps", f"{a['images_seen']:,}",
         f"{a['is']['mean']:.2f}", f"{100 * a['acc']['mean']:.0f}%"] for a in arms])


# ---- key numbers: the claims the prose reads -----------------------------------------------

TTT = f"{A}time_to_target.{ARM}.metrics"
AT7 = f"{TTT}.is_mean[target=7.0]"
STEPS, IMAGES = (f"{A}verdicts.comparisons[name={n}]" for n in ("equal_steps", "equal_images"))
TRENDS, RATIO = f"{A}verdicts.trends", f"{A}schedule_confound.ratio_target_to_baseline"
NOISE_RUN = f"{A}noise_scale.measurements[batch=64].summary"
COUPLING = f"{A}noise_scale.coupling[name=bs0064_cpu2_"
X2, P, PCT = "{:.2f}x", "p", "{:+.1f}%"
METRIC_NAMES = (("is", "IS"), ("fid", "FID"), ("acc", "accuracy"))

KEYS = {
    "answer_steps": [
        Key("64 -> 512: steps saved to IS 7.0", f"{AT7}.speedups[batch=512].steps_saved", X2,
            f"{AT7}.speedups[batch=512].ci"),
        Key("64 -> 512: images spent to IS 7.0", f"{AT7}.speedups[batch=512].images_spent", X2),
        Key("B_crit at IS 7.0 (real images a step)", f"{AT7}.fit.b_crit", "{:.0f}",
            f"{AT7}.fit.b_crit_ci"),
        Key("B_crit, every IS target from 3.5", f"{TTT}.is_mean[target>=3.5].fit.b_crit", "{:.0f}"),
        Key("batch 512 at lr x sqrt 8: steps saved to IS 7.0 against lr x1",
            f"{A}probes.lr_probe.targets[target=7.0,batch=512].steps_saved", X2),
        Key("batch 512 at lr x sqrt 8: final IS (2 seeds)",
            f"{A}probes.lr_probe.points[seed>=0].final_is", "{:.2f}")],
    "answer_equal_steps": [
        Key("IS: the paper's direction", f"{STEPS}.verdicts[metric=is].direction"),
        Key("IS: the paper's size", f"{STEPS}.verdicts[metric=is].size"),
        Key("IS change, 64 -> 512 (6 seeds a side)", f"{S}[batch=512].is_ratio_ci.ratio",
            "{:+.1f}%", f"{S}[batch=512].is_ratio_ci", "change"),
        Key("IS: exact Mann-Whitney p", f"{STEPS}.metrics.is.exact.p_value", P),
        Key("FID: Holm-adjusted p", f"{STEPS}.metrics.fid.holm_p", P),
        Key("accuracy: Holm-adjusted p", f"{STEPS}.metrics.acc.holm_p", P),
        Key("512 / 64 IS ratio, seeds 0-2, lr decayed, step 200", f"{RATIO}.decayed.200.ratio",
            "{:.2f}"),
        Key("the same at step 1,000", f"{RATIO}.decayed.1000.ratio", "{:.2f}"),
        Key("the same with the lr constant, step 1,000", f"{RATIO}.constant.1000.ratio",
            "{:.2f}")],
    "answer_equal_images": [
        Key("IS change, 64 x 8,000 steps -> 512 x 1,000", f"{IMAGES}.metrics.is.interval.ratio",
            PCT, f"{IMAGES}.metrics.is.interval", "change"),
        Key("IS: the paper's direction", f"{IMAGES}.verdicts[metric=is].direction"),
        Key("IS: exact Mann-Whitney p (3 vs 6 seeds)", f"{IMAGES}.metrics.is.exact.p_value", P),
        Key("IS seed spread: median coefficient of variation",
            f"{A}verdicts.seed_spread.is.median_cv", "{:.1f}%", scale="%"),
        Key("IS of one checkpoint re-scored: median coefficient of variation",
            f"{A}verdicts.evaluation_noise.is.median_cv", "{:.2f}%", scale="%")],
    "equal_steps": [
        *(k for m, label in METRIC_NAMES for k in (
            Key(f"{label}: the paper's direction", f"{STEPS}.verdicts[metric={m}].direction"),
            Key(f"{label} change, 64 -> 512", f"{S}[batch=512].{m}_ratio_ci.ratio", PCT,
                f"{S}[batch=512].{m}_ratio_ci", "change"),
            Key(f"{label}: exact Mann-Whitney p", f"{STEPS}.metrics.{m}.exact.p_value", P))),
        Key("IS: the paper's size", f"{STEPS}.verdicts[metric=is].size"),
        Key("the smallest p 6 vs 6 seeds can reach", f"{STEPS}.metrics.is.exact.smallest_p", P),
        Key("FID: Holm-adjusted p", f"{STEPS}.metrics.fid.holm_p", P),
        Key("accuracy: Holm-adjusted p", f"{STEPS}.metrics.acc.holm_p", P),
        Key("accuracy at batch 64", f"{S}[batch=64].acc", "{:.0f}%", scale="%"),
        Key("accuracy at batch 512", f"{S}[batch=512].acc", "{:.0f}%", scale="%")],
    "trends_and_noise": [
        Key("points in the trend (all seeds pooled)", f"{TRENDS}.is.n"),
        *(Key(f"Spearman's rho over log2(batch): {label}", f"{TRENDS}.{m}.spearman_rho", "{:+.2f}")
          for m, label in METRIC_NAMES),
        Key("random orderings of the permutation test", f"{TRENDS}.is.resamples", "{:,}"),
        Key("log IS line in log2(batch), 8..512: lack-of-fit p",
            f"{TRENDS}.is.lines[first=8,last=512].lack_of_fit_p", P),
        Key("the same over 64..512", f"{TRENDS}.is.lines[first=64,last=512].lack_of_fit_p", P),
        Key("IS change per doubling, 64..512",
            f"{TRENDS}.is.lines[first=64,last=512].ratio_per_doubling", PCT, scale="change"),
        *(Key(f"{what}, median coefficient of variation: {label}",
              f"{A}verdicts.{key}.{m}.median_cv", spec, scale="%")
          for what, key, specs in (("seed spread", "seed_spread", ("{:.1f}%",) * 3),
                                   ("evaluation noise", "evaluation_noise",
                                    ("{:.2f}%", "{:.2f}%", "{:.1f}%")))
          for (m, label), spec in zip(METRIC_NAMES, specs))],
    "equal_images": [
        *(Key(f"batch {who}: {label}", f"{IMAGES}.{arm}.{m}.mean", spec)
          for arm, who in (("baseline", "64 x 8,000 steps"), ("target", "512 x 1,000 steps"))
          for m, label, spec in (("is", "IS", "{:.2f}"), ("fid", "FID", "{:.1f}"),
                                 ("acc", "accuracy", "{:.3f}"))),
        Key("IS: the paper's direction", f"{IMAGES}.verdicts[metric=is].direction"),
        Key("IS change, 64 -> 512", f"{IMAGES}.metrics.is.interval.ratio", PCT,
            f"{IMAGES}.metrics.is.interval", "change"),
        Key("its Welch degrees of freedom", f"{IMAGES}.metrics.is.interval.df", "{:.1f}"),
        Key("IS change paired by seed (seeds 0-2)", f"{IMAGES}.metrics.is.paired.ratio", PCT,
            f"{IMAGES}.metrics.is.paired", "change"),
        Key("FID: the paper's direction", f"{IMAGES}.verdicts[metric=fid].direction"),
        Key("FID: Holm-adjusted p", f"{IMAGES}.metrics.fid.holm_p", P),
        Key("accuracy: the paper's direction", f"{IMAGES}.verdicts[metric=acc].direction"),
        Key("accuracy: Holm-adjusted p", f"{IMAGES}.metrics.acc.holm_p", P)],
    "time_to_target_keys": [
        Key("B_crit, IS targets 3.5 to 7.0", f"{TTT}.is_mean[target>=3.5].fit.b_crit", "{:.0f}"),
        Key("64 -> 512: steps saved, IS targets 4.0 to 7.0",
            f"{TTT}.is_mean[target>=4].speedups[batch=512].steps_saved", X2),
        Key("64 -> 512: images spent, IS targets 4.0 to 7.0",
            f"{TTT}.is_mean[target>=4].speedups[batch=512].images_spent", X2),
        Key("B_crit, accuracy targets 0.20 to 0.80", f"{TTT}.accuracy[target>=0.2].fit.b_crit",
            "{:.0f}"),
        Key("64 -> 512: steps saved, accuracy targets 0.20 to 0.80",
            f"{TTT}.accuracy[target>=0.2].speedups[batch=512].steps_saved", X2),
        Key("batch 512 at lr x sqrt 8: final IS (2 seeds)",
            f"{A}probes.lr_probe.points[seed>=0].final_is", "{:.2f}")],
    "noise_scale_runs": [
        *(Key(f"300-step run at batch 64: {p.upper()}'s B_simple", f"{NOISE_RUN}.{p}.b_simple",
              "{:.0f}", f"{NOISE_RUN}.{p}") for p in ("d", "g")),
        *(Key(f"v2 run at batch {b}: D's B_simple", f"{A}noise_scale.placements"
              f"[player=d,batch={b}].b_simple", "{:.0f}") for b in (64, 512)),
        *(Key(f"batch 64 on cpu:2, {how} BN statistics: {p.upper()}'s B_simple",
              f"{COUPLING}{bn}_bn.json].{p}.b_simple", "{:.0f}", f"{COUPLING}{bn}_bn.json].{p}")
          for bn, how in (("shared", "shared"), ("local", "per-replica")) for p in ("g", "d"))],
    "schedule_keys": [
        *(Key(f"IS at batch {b}, step 1,000: lr constant / lr decayed",
              f"{A}schedule_confound.at_step.{b}.ratio.ratio", "{:.3f}",
              f"{A}schedule_confound.at_step.{b}.ratio") for b in (64, 512))],
}

BLOCKS = {"batch_table": batch_table, "batch_table_short": lambda r: batch_table(r, short=True),
          "bn_modes": bn_modes, "headline": headline, "time_to_target": time_to_target,
          "b_crit_by_target": b_crit_by_target, "noise_scale": noise_scale, "lr_probe": lr_probe,
          "schedule": schedule, "precision": precision, "plateau": plateau,
          "equal_images_arms": equal_images_arms,
          **{name: lambda r, keys=keys: key_table(r, keys) for name, keys in KEYS.items()}}


def rebuild(text: str, report: dict) -> str:
    """`text` with every results block re-rendered from `report` (load())."""
    def render(name: str) -> str:
        if name not in BLOCKS:
            raise SystemExit(f"docs block '{name}' is not one of {sorted(BLOCKS)}")
        return BLOCKS[name](report) + "\n"
    return marked_blocks.rebuild(text, TAG, render)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    args = p.parse_args(argv)
    report, stale = load(), []
    for path in DOCS:
        with open(path) as f:
            text = f.read()
        new = rebuild(text, report)
        if new != text:
            stale.append(os.path.relpath(path, ROOT))
            if not args.check:
                files.atomic_write_text(path, new)
    if args.check and stale:
        sys.exit(f"{', '.join(stale)} out of date: run python -m experiments.reporting.build_docs")
    print(f"{', '.join(stale) or 'README.md, docs/study.md'}: "
          f"{'rebuilt' if stale else 'up to date'}")


if __name__ == "__main__":
    main()
