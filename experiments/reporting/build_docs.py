"""Renders the committed report's numbers into README.md and docs/study.md.

    python -m experiments.reporting.build_docs [--check]

The two files are prose written by a person around generated blocks between
`<!-- results: NAME -->` and `<!-- /results: NAME -->` (common/marked_blocks.py, as
docs/benchmarks.md's). Every block is rendered from results/fashion_mnist/report/summary.json
and analysis.json alone, not through the reporting sections (which may change shape): tables,
sentences from fixed templates (docs_tables.py), and key-number tables that name each number's
source key (KEYS below: the numbers the prose around them reads).
--check exits 1 if a block is not what the committed report renders to.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import NamedTuple

from common import files, marked_blocks
from experiments.reporting import docs_tables
from experiments.reporting.docs_tables import ARM
from experiments.reporting.lib import markdown

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "results", "fashion_mnist", "report")
DOCS = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "study.md")]
TAG = "results"
A, S = "analysis.json ", "summary.json "  # the files a source key names


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


# ---- key numbers: the claims the prose reads -----------------------------------------------

TTT = f"{A}time_to_target.{ARM}.metrics"
AT7, PROBE = f"{TTT}.is_mean[target=7.0]", f"{A}probes.lr_probe"
STEPS, IMAGES = (f"{A}verdicts.comparisons[name={n}]" for n in ("equal_steps", "equal_images"))
TRENDS, RATIO = f"{A}verdicts.trends", f"{A}schedule_confound.ratio_target_to_baseline"
RUN = f"{A}noise_scale.measurements[batch=64].summary"
BN = f"{A}noise_scale.coupling[name=bs0064_cpu2_"
X2, P, PCT, N0 = "{:.2f}x", "p", "{:+.1f}%", "{:.0f}"
METRIC_NAMES = (("is", "IS"), ("fid", "FID"), ("acc", "accuracy"))
ROB, EQ = f"{A}robustness", "baseline_arm=equal_steps,target_arm=equal_steps,target_batch=512"
EXTRACTORS = ("fashion_mnist_classifier", "fashion_mnist_resnet")


def _verdict(who: str, m: str, label: str) -> Key:
    return Key(f"{label}: the paper's direction", f"{who}.verdicts[metric={m}].direction")


def _change(m: str, label: str, batch: int = 512) -> Key:
    return Key(f"{label} change, 64 -> {batch}", f"{S}[batch={batch}].{m}_ratio_ci.ratio", PCT,
               f"{S}[batch={batch}].{m}_ratio_ci", "change")


def _p(who: str, m: str, label: str, test: str = "exact.p_value") -> Key:
    name = "exact Mann-Whitney p" if test.startswith("exact") else "Holm-adjusted p"
    return Key(f"{label}: {name}", f"{who}.metrics.{m}.{test}", P)


KEYS = {
    "answer_steps": [
        Key("64 -> 512: steps saved to IS 7.0", f"{AT7}.speedups[batch=512].steps_saved", X2,
            f"{AT7}.speedups[batch=512].ci"),
        Key("64 -> 512: images spent to IS 7.0", f"{AT7}.speedups[batch=512].images_spent", X2),
        Key("B_crit at IS 7.0 (real images a step)", f"{AT7}.fit.b_crit", N0,
            f"{AT7}.fit.b_crit_ci"),
        Key("B_crit, every IS target from 3.5", f"{TTT}.is_mean[target>=3.5].fit.b_crit", N0),
        Key("batch 512 at lr x sqrt 8: steps saved to IS 7.0 against lr x1",
            f"{PROBE}.targets[target=7.0,batch=512].steps_saved", X2),
        Key("batch 512 at lr x sqrt 8: final IS (2 seeds)",
            f"{PROBE}.points[seed>=0].final_is", "{:.2f}")],
    "answer_equal_steps": [
        _verdict(STEPS, "is", "IS"),
        Key("IS: the paper's size", f"{STEPS}.verdicts[metric=is].size"),
        _change("is", "IS")._replace(quantity="IS change, 64 -> 512 (6 seeds a side)"),
        _p(STEPS, "is", "IS"), _p(STEPS, "fid", "FID", "holm_p"),
        _p(STEPS, "acc", "accuracy", "holm_p"),
        Key("512 / 64 IS ratio, seeds 0-2, lr decayed, step 200", f"{RATIO}.decayed.200.ratio",
            "{:.2f}"),
        Key("the same at step 1,000", f"{RATIO}.decayed.1000.ratio", "{:.2f}"),
        Key("the same with the lr constant, step 1,000", f"{RATIO}.constant.1000.ratio", "{:.2f}")],
    "answer_equal_images": [
        Key("IS change, 64 x 8,000 steps -> 512 x 1,000", f"{IMAGES}.metrics.is.interval.ratio",
            PCT, f"{IMAGES}.metrics.is.interval", "change"),
        _verdict(IMAGES, "is", "IS"),
        _p(IMAGES, "is", "IS")._replace(quantity="IS: exact Mann-Whitney p (3 vs 6 seeds)"),
        Key("IS seed spread: median coefficient of variation",
            f"{A}verdicts.seed_spread.is.median_cv", "{:.1f}%", scale="%"),
        Key("IS of one checkpoint re-scored: median coefficient of variation",
            f"{A}verdicts.evaluation_noise.is.median_cv", "{:.2f}%", scale="%")],
    "equal_steps": [
        *(k for m, label in METRIC_NAMES
          for k in (_verdict(STEPS, m, label), _change(m, label), _p(STEPS, m, label))),
        Key("IS: the paper's size", f"{STEPS}.verdicts[metric=is].size"),
        Key("the smallest p 6 vs 6 seeds can reach", f"{STEPS}.metrics.is.exact.smallest_p", P),
        _p(STEPS, "fid", "FID", "holm_p"), _p(STEPS, "acc", "accuracy", "holm_p"),
        *(Key(f"accuracy at batch {b}", f"{S}[batch={b}].acc", "{:.0f}%", scale="%")
          for b in (64, 512))],
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
              f"{A}verdicts.{what.replace(' ', '_')}.{m}.median_cv", spec, scale="%")
          for what, specs in (("seed spread", ("{:.1f}%",) * 3),
                              ("evaluation noise", ("{:.2f}%", "{:.2f}%", "{:.1f}%")))
          for (m, label), spec in zip(METRIC_NAMES, specs))],
    "equal_images": [
        *(Key(f"batch {who}: {label}", f"{IMAGES}.{arm}.{m}.mean", spec)
          for arm, who in (("baseline", "64 x 8,000 steps"), ("target", "512 x 1,000 steps"))
          for (m, label), spec in zip(METRIC_NAMES, ("{:.2f}", "{:.1f}", "{:.3f}"))),
        _verdict(IMAGES, "is", "IS"),
        Key("IS change, 64 -> 512", f"{IMAGES}.metrics.is.interval.ratio", PCT,
            f"{IMAGES}.metrics.is.interval", "change"),
        Key("its Welch degrees of freedom", f"{IMAGES}.metrics.is.interval.df", "{:.1f}"),
        Key("IS change paired by seed (seeds 0-2)", f"{IMAGES}.metrics.is.paired.ratio", PCT,
            f"{IMAGES}.metrics.is.paired", "change"),
        *(k for m, label in METRIC_NAMES[1:]
          for k in (_verdict(IMAGES, m, label), _p(IMAGES, m, label, "holm_p")))],
    "time_to_target_keys": [
        Key("B_crit, IS targets 3.5 to 7.0", f"{TTT}.is_mean[target>=3.5].fit.b_crit", N0),
        *(Key(f"64 -> 512: {what.replace('_', ' ')}, IS targets 4.0 to 7.0",
              f"{TTT}.is_mean[target>=4].speedups[batch=512].{what}", X2)
          for what in ("steps_saved", "images_spent")),
        Key("B_crit, accuracy targets 0.20 to 0.80", f"{TTT}.accuracy[target>=0.2].fit.b_crit", N0),
        Key("64 -> 512: steps saved, accuracy targets 0.20 to 0.80",
            f"{TTT}.accuracy[target>=0.2].speedups[batch=512].steps_saved", X2),
        Key("batch 512 at lr x sqrt 8: final IS (2 seeds)", f"{PROBE}.points[seed>=0].final_is",
            "{:.2f}")],
    "noise_scale_runs": [
        *(Key(f"300-step run at batch 64: {p.upper()}'s B_simple", f"{RUN}.{p}.b_simple", N0,
              f"{RUN}.{p}") for p in ("d", "g")),
        *(Key(f"v2 run at batch {b}: D's B_simple",
              f"{A}noise_scale.placements[player=d,batch={b}].b_simple", N0) for b in (64, 512)),
        *(Key(f"batch 64 on cpu:2, {how} BN statistics: {p.upper()}'s B_simple",
              f"{BN}{bn}_bn.json].{p}.b_simple", N0, f"{BN}{bn}_bn.json].{p}")
          for bn, how in (("shared", "shared"), ("local", "per-replica")) for p in ("g", "d"))],
    "robustness": [
        *(Key(f"{label} change, 64 -> 512 at equal steps, {ext}", f"{ROB}.changes[{EQ},metric="
              f"{m}@{ext}].interval.ratio", PCT, f"{ROB}.changes[{EQ},metric={m}@{ext}].interval",
              "change")
          for m, label in (("is", "IS"), ("fid", "FID")) for ext in EXTRACTORS),
        Key("CAS change, 64 -> 512 at equal steps", f"{ROB}.changes[{EQ},metric=cas].interval"
            ".ratio", PCT, f"{ROB}.changes[{EQ},metric=cas].interval", "change"),
        *(Key(f"CAS at batch {b} (6 seeds)", f"{ROB}.rows[arm=equal_steps,batch={b}].metrics.cas"
              ".mean", "{:.3f}") for b in (64, 512)),
        *(Key(f"batch ranking, {label}: Spearman's rho between the extractors",
              f"{ROB}.ranks[arm=equal_steps,metric={m}].rho", "{:.2f}") for m, label in
          (("is", "IS"), ("fid", "FID"))),
        Key("... over this many batch sizes", f"{ROB}.ranks[arm=equal_steps,metric=is].batches"),
        *(Key(f"{label}, {what}", f"{ROB}.changes[{cmp},metric={m}].interval.ratio", PCT,
              f"{ROB}.changes[{cmp},metric={m}].interval", "change")
          for what, cmp in (
              ("constant_lr 64 -> 512 (v4)", "baseline_arm=constant_lr,target_arm=constant_lr"),
              ("64 x 8,000 (equal images) -> 512 x 1,000",
               "baseline_arm=equal_images,target_arm=equal_steps"))
          for m, label in ((f"is@{EXTRACTORS[0]}", f"IS change ({EXTRACTORS[0]})"),
                           (f"is@{EXTRACTORS[1]}", f"IS change ({EXTRACTORS[1]})"),
                           ("cas", "CAS change"))),
        Key("constant_lr batch ranking, IS: Spearman's rho between the extractors",
            f"{ROB}.ranks[arm=constant_lr,metric=is].rho", "{:.2f}"),
        Key("... its exact p (6 batch sizes)", f"{ROB}.ranks[arm=constant_lr,metric=is].p_value",
            "{:.3f}"),
        Key("CAS ceiling: the recipe on real training images",
            f"{ROB}.real[extractor={EXTRACTORS[0]}].cas_ceiling", "{:.3f}"),
        *(Key(f"memorised share at batch {b}, pixels",
              f"{ROB}.rows[arm=equal_steps,batch={b}].metrics.memorised@pixels.mean", "{:.4f}")
          for b in (64, 512)),
        Key(f"memorised share, equal_images batch 64 (8,000 steps), {EXTRACTORS[1]} features",
            f"{ROB}.rows[arm=equal_images,batch=64].metrics.memorised@{EXTRACTORS[1]}.mean",
            "{:.4f}")],
    "schedule_keys": [
        Key(f"IS at batch {b}, step 1,000: lr constant / lr decayed",
            f"{A}schedule_confound.at_step.{b}.ratio.ratio", "{:.3f}",
            f"{A}schedule_confound.at_step.{b}.ratio") for b in (64, 512)],
}

BLOCKS = {**docs_tables.TABLES,
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
