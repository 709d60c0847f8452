"""Every sentence the report's prose generators can print is complete.

A report once broke off mid-sentence ("G's disagrees: " and nothing after it). Here each
generator's branches are walked with small synthetic inputs (itertools.product over its axes),
and every paragraph and list item it writes goes through `assert_complete`: each sentence ends,
its brackets close, no clause or colon is left empty, and no None, nan or table placeholder
stands where words should be. Figures are not prose: the sections' figure writers are stubbed.
"""
import dataclasses
import itertools
import json
import math
import os
import re

import pytest
from fake_results import PROTOCOL, make_point

from experiments import configs, records
from experiments.records import PointRecord, Scores
from experiments.reporting.lib import mccandlish as fit_lib
from experiments.reporting.lib import stats as st
from experiments.reporting.sections import batch_table as tables
from experiments.reporting.sections import noise_scale as cb
from experiments.reporting.sections import precision as precision_check
from experiments.reporting.sections import time_to_target as ttt
from experiments.reporting.sections import verdicts as analysis

# -- the check --------------------------------------------------------------------------------
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
WORD = re.compile(r"\w")
MISSING = re.compile(r"\b(None|nan|NaN|inf|Infinity|null)\b")
# a table's '-' left standing in prose ("[-, -]", "final IS -."); not "steps - 1" or "-0.5"
PLACEHOLDER = re.compile(r"(?:^|[\s(\[])-(?=[.,;)\]]|\s(?!\d)|$)")
CLOSING = {")": "(", "]": "["}
# one thing counted as several: "1 batch sizes", "0 of 1 curves" (not "1 vs 1 seeds")
PLURAL = re.compile(r"(?<![\d.,])(?<!vs )1 (?:batch sizes|points|curves|targets|seeds)\b")


def _words(text: str) -> list[str]:
    return [t for t in text.split() if WORD.search(t)]


def _balanced(text: str) -> bool:
    stack = []
    for ch in text:
        if ch in "([":
            stack.append(ch)
        elif ch in CLOSING and (not stack or stack.pop() != CLOSING[ch]):
            return False
    return not stack


def _assert_clean(text: str) -> None:
    """What no prose may hold, whether a sentence or the line introducing a table."""
    assert text and text == text.strip(), f"empty or padded: {text!r}"
    assert "  " not in text, f"double space: {text!r}"
    assert _balanced(text), f"unbalanced brackets: {text!r}"
    assert not MISSING.search(text), f"a missing value printed: {text!r}"
    assert not PLACEHOLDER.search(text), f"a '-' placeholder in prose: {text!r}"
    assert not re.search(r"\s[.,;:!?)\]]", text), f"space before punctuation: {text!r}"
    assert not re.search(r"[(\[]\s|\(\)|\[\]", text), f"empty bracket: {text!r}"
    assert not re.search(r"[:;,][.,;:!?)\]]", text), f"empty clause: {text!r}"
    assert not PLURAL.search(text), f"one counted as several: {text!r}"


def assert_complete(text: str) -> None:
    """A paragraph of whole sentences: it ends with '.', '!', '?' or '.)' (an aside closing
    the sentence), each sentence has 3 or more words, each ';' clause 2 or more, and there are
    words on both sides of every ':'. An empty verdict ("G's prediction ." or "disagrees: .")
    fails several of these at once."""
    _assert_clean(text)
    assert text.endswith((".", "!", "?", ".)")), f"no final period: {text!r}"
    for sentence in SENTENCE_BREAK.split(text):
        assert len(_words(sentence)) >= 3, f"fragment {sentence!r} in {text!r}"
        for clause in sentence.split(";"):
            assert len(_words(clause)) >= 2, f"empty clause {clause!r} in {text!r}"
            for part in clause.split(":"):
                assert _words(part), f"nothing beside a colon in {clause!r} of {text!r}"


def check_markdown(md: str, table_words: tuple[str, ...] = ()) -> list[str]:
    """Checks a Markdown section and returns its prose: every paragraph and list item is
    complete (headings, images and code left out); a line ending in ':' introduces a table,
    list or code block; a table's rows have its header's cells and no missing values (except
    `table_words`, e.g. 'inf' for an unbounded interval)."""
    lines = md.split("\n")
    found, header = [], ""
    for i, line in enumerate(lines):
        if line.startswith("|"):
            header = line if i == 0 or not lines[i - 1].startswith("|") else header
            assert line.count("|") == header.count("|"), f"row {line!r} vs {header!r}"
            assert all(m.group() in table_words for m in MISSING.finditer(line)), line
            continue
        if not line.strip() or line.startswith(("#", "![", "    ")):
            continue
        text = re.sub(r"^\s*- ", "", line)
        if text.startswith("**") and text.endswith("**"):
            text = text[2:-2]
        if text.endswith(":"):
            after = next((x for x in lines[i + 1:] if x.strip()), "")
            assert after.startswith(("|", "- ", "    ")), f"{line!r} introduces nothing"
            _assert_clean(text)
            assert len(_words(text)) >= 2, f"fragment {text!r}"
        else:
            assert_complete(text)
        found.append(text)
    return found


def test_the_check_catches_what_broke_the_report():
    assert_complete("D's prediction agrees (within one doubling of the measured 32 to 100).")
    for broken in ("D's prediction agrees; G's prediction .", "G's prediction disagrees: .",
                   "G's prediction disagrees: ", "D's prediction agrees; ; G's agrees.",
                   "D's prediction agrees (within one doubling", "G's prediction None.",
                   "B_crit is nan at IS 3.0.", "It agrees  twice.", "Constant / decayed [-, -].",
                   "Two words.", "IS moves:; FID does not.", "The measured [32, 100).",
                   "Spread over 1 batch sizes.", "It flattened 0 of 1 curves."):
        with pytest.raises(AssertionError):
            assert_complete(broken)
    with pytest.raises(AssertionError):  # a colon introducing nothing
        check_markdown("Measured with:\n\nThe end of it all.")


# -- synthetic inputs -------------------------------------------------------------------------
def fit(b_crit: float, ci=None, at_bound: str = "") -> dict:
    """A fit of one target as analyse_arm stores it (critical_batch_fit.Fit.to_dict)."""
    return fit_lib.Fit(s_min=200.0, b_crit=b_crit, e_min=400.0 * b_crit, n_dis=2,
                       batches=(16, 64, 256), log_steps=(7.0, 6.0, 5.5),
                       censored=(False, False, False), residuals=(0.01, -0.02, 0.01),
                       at_bound=at_bound, b_crit_ci=ci).to_dict()


def arm_results(*fits) -> dict:
    """A time-to-target section's results: one IS target per fit (None: no fit there)."""
    return {"constant_lr": {"metrics": {"is_mean": [
        dict(target=3.0 + 0.5 * i, fit=f) for i, f in enumerate(fits)]}}}


def noise_scale(b_d, b_g) -> dict:
    """A run's records.NoiseScale as a dict, B_simple of D and G (None: no estimate)."""
    def est(b):
        bounded = b is not None and b > 0
        return dict(measurements=0 if b is None else 12, window_start=None if b is None else 130,
                    b_simple=b, ci_low=0.8 * b if bounded else None,
                    ci_high=1.3 * b if bounded else None, ema_mean=b, ema_std=None)
    return records.NoiseScale.from_dict(dict(
        estimator="B_simple", source="2 slices", every=10, ema_decay=0.9, window_fraction=0.5,
        batches={"d": [32, 64], "g": [32, 64]}, d=est(b_d), g=est(b_g))).to_dict()


# -- critical_batch: the prediction against the measured critical batch ----------------------
# B_simple per run, and the verdict it must get against each measured side below (B_crit 64,
# or 40 to 100 with intervals from 32 to 125): below / within / above, one or several runs
PREDICTED = {"no run": ([], "is missing"), "undefined": ([None, -3.0], "is missing"),
             "below": ([2.0], "disagrees"), "within": ([64.0], "agrees"),
             "above": ([4096.0], "disagrees"), "several below": ([2.0, 4.0], "disagrees"),
             "several within": ([40.0, 100.0], "agrees"), "spanning": ([2.0, 4096.0], "agrees"),
             "several above": ([2048.0, 4096.0], "disagrees"),
             "one undefined": ([None, 64.0], "agrees")}
MEASURED = {"no arm": None, "no arms": {}, "only fits at a bound": arm_results(
                fit(1e5, at_bound="upper"), None, fit(0.1, at_bound="lower")),
            "one fit, no interval": arm_results(fit(64.0)),
            "one fit": arm_results(fit(64.0, (50.0, 80.0))),
            "several fits": arm_results(fit(40.0, (32.0, 50.0)), fit(100.0, (80.0, 125.0))),
            "several, one without interval": arm_results(fit(40.0), None,
                                                         fit(100.0, (80.0, 125.0)))}
VERDICT_CLAUSE = re.compile(r"([DG])'s prediction (is missing|cannot be tested|agrees|disagrees)"
                            r"\b.+")


def found_runs(d: list, g: list) -> list[dict]:
    """critical_batch.measurements' entries, one run per B_simple pair (None-padded)."""
    n = max(len(d), len(g))
    d, g = d + [None] * (n - len(d)), g + [None] * (n - len(g))
    return [dict(batch=64 * 2 ** i, source=f"sweep, seed {i}", steps=100,
                 summary=noise_scale(bd, bg)) for i, (bd, bg) in enumerate(zip(d, g))]


def test_every_prediction_against_every_measurement_is_said_in_full():
    combos = list(itertools.product(PREDICTED, PREDICTED, MEASURED))
    for d, g, m in combos:
        found = found_runs(PREDICTED[d][0], PREDICTED[g][0])
        measured = cb.measured_b_crit(MEASURED[m])
        text = cb.comparison(found, measured)
        assert_complete(text)
        [verdicts] = [s for s in SENTENCE_BREAK.split(text) if s.startswith("D's prediction")]
        clauses = [VERDICT_CLAUSE.fullmatch(c.strip().rstrip(".")) for c in verdicts.split(";")]
        assert all(clauses) and [c.group(1) for c in clauses] == ["D", "G"], verdicts
        for c, key in zip(clauses, (d, g)):
            want = PREDICTED[key][1]
            assert c.group(2) == (want if measured or want == "is missing"
                                  else "cannot be tested"), (key, m, verdicts)
        check_markdown("\n".join(cb.table(found)), table_words=("inf",))
    assert len(combos) == 700


@pytest.fixture
def no_figures(monkeypatch):
    """Figures are not prose: their writers do nothing here (and the tests stay fast)."""
    monkeypatch.setattr(cb, "figure", lambda *a, **k: None)
    monkeypatch.setattr(ttt, "figures", lambda *a, **k: None)


def test_the_noise_scale_section_in_each_form(tmp_path, no_figures):
    """Saved runs (with or without their command) and sweep points carrying measurements, each
    against every measured side; and the one line when nothing is measured."""
    plain = make_point(64, 0, 4.0, 40.0)
    carrying = dataclasses.replace(plain, record=plain.record.replace(
        noise_scale=records.NoiseScale.from_dict(noise_scale(20.0, None))))
    md = cb.critical_batch_markdown([plain], str(tmp_path), str(tmp_path / "report"))
    assert len(check_markdown(md)) == 1
    series = {p: dict(steps=[10, 20], b_simple=[30.0, 30.0]) for p in ("d", "g")}
    combos = list(itertools.product(("none", "with command", "without command"),
                                    (False, True), MEASURED))
    for i, (saved, carried, m) in enumerate(combos):
        if saved == "none" and not carried:
            continue  # the one-line section above
        sweep = tmp_path / str(i)
        os.makedirs(sweep / cb.RUNS_DIR)
        if saved != "none":
            run = dict(global_batch_size=512, steps=20, noise_scale=noise_scale(100.0, 300.0),
                       series=series)
            if saved == "with command":
                run["command"] = "python -m experiments noise-scale --batch-size 512"
            (sweep / cb.RUNS_DIR / "bs0512.json").write_text(json.dumps(run))
        points = [carrying if carried else plain, make_point(512, 0, 6.0, 20.0)]
        md = cb.critical_batch_markdown(points, str(sweep), str(sweep / "report"), MEASURED[m])
        check_markdown(md, table_words=("inf",))
    assert len(combos) == 42


# -- time_to_target_report: headline, noise verdict, confound, probe, coupling, section -------
SPEEDUPS = {"absent": None,
            "both censored": fit_lib.Speedup(64, 512, math.nan, None, math.nan, "?"),
            "a bound": fit_lib.Speedup(64, 512, 3.0, None, 8 / 3, ">"),
            "measured": fit_lib.Speedup(64, 512, 3.0, (2.5, 3.5), 8 / 3),
            "no interval": fit_lib.Speedup(64, 512, 3.0, None, 8 / 3),
            "slower": fit_lib.Speedup(64, 512, 0.8, (0.7, 0.9), 10.0)}
FITS = {"none": None, "upper": fit(1e5, at_bound="upper"), "lower": fit(0.1, at_bound="lower"),
        "bounded": fit(100.0, (80.0, 125.0)), "no interval": fit(150.0)}


def target_row(target: float, up: str, f: str) -> dict:
    """One IS target of analyse_arm's result: a 64 -> 128 speedup always, 64 -> 512 as `up`."""
    ups = [fit_lib.Speedup(64, 128, 1.8, (1.6, 2.0), 1.1), SPEEDUPS[up]]
    return dict(target=target, crossings={}, reaching=[], fit=FITS[f],
                speedups=[u.to_dict() for u in ups if u], b_simple={"d": None, "g": None})


def test_every_headline_is_a_sentence():
    combos = [combo for n in (1, 2)
              for combo in itertools.product(itertools.product(SPEEDUPS, FITS), repeat=n)]
    for combo in combos:
        rows = [target_row(3.0 + 0.5 * i, up, f) for i, (up, f) in enumerate(combo)]
        assert_complete(ttt.headline({"metrics": {"is_mean": rows}}))
    assert len(combos) == 930


def test_the_headline_names_the_targets_its_span_runs_between():
    rows = [target_row(3.0, "measured", "none"), target_row(3.5, "slower", "bounded"),
            target_row(4.0, "slower", "no interval"), target_row(4.5, "absent", "upper")]
    text = ttt.headline({"metrics": {"is_mean": rows}})
    assert "needs 1.25x more steps to IS 4.0 [1.11, 1.43]" in text
    assert "from 100 at IS 3.5 to 150 at IS 4.0." in text


def reading(multiple, b_crit) -> dict | None:
    """B_simple read at a target, `multiple` times its B_crit (None: no reading)."""
    return None if multiple is None else dict(geomean=multiple * b_crit,
                                              low=0.5 * multiple * b_crit,
                                              high=2 * multiple * b_crit, n=3)


READINGS = {"none": None, "inside": 1.0, "outside": 20.0}
VERDICT_FITS = ("none", "upper", "no interval", "bounded")


def verdict_row(i: int, rising: bool, f: str, d: str, g: str) -> dict:
    b = 100.0 * (1.5 if rising else 0.7) ** i
    fitted = {"none": None, "upper": fit(1e5, at_bound="upper"), "no interval": fit(b),
              "bounded": fit(b, (0.8 * b, 1.25 * b))}[f]
    return dict(target=3.0 + 0.5 * i, fit=fitted,
                b_simple={"d": reading(READINGS[d], b), "g": reading(READINGS[g], b)})


def test_every_noise_verdict_is_complete():
    combos = [(rising, combo) for rising in (True, False) for n in (1, 2)
              for combo in itertools.product(itertools.product(VERDICT_FITS, READINGS,
                                                               READINGS), repeat=n)]
    for rising, combo in combos:
        rows = [verdict_row(i, rising, *c) for i, c in enumerate(combo)]
        text = ttt.noise_verdict(rows)
        assert_complete(text)
        assert " 0 of 0 " not in text and "1 of 1 targets" not in text, text
    assert len(combos) == 2 * (36 + 36 ** 2)


def ratio(a, b) -> dict:
    return st.welch_ratio(a, b).to_dict()


AT_STEP = {"none": {}, "batch 64": {"64": dict(decayed=[4.0, 4.1], constant=[4.4, 4.5],
                                               ratio=ratio([4.0, 4.1], [4.4, 4.5]))},
           "one seed": {"64": dict(decayed=[4.0], constant=[4.4], ratio=ratio([4.0], [4.4]))}}
AT_STEP["both"] = {**AT_STEP["batch 64"], "512": AT_STEP["one seed"]["64"]}
SERIES = {"none": {}, "one step": {"1000": ratio([4.0, 4.1], [5.0, 5.2])},
          "two steps": {"500": ratio([3.0], [4.0]), "1000": ratio([4.0, 4.1], [5.0, 5.2])}}


def test_every_schedule_confound_is_complete():
    check_markdown("\n".join(ttt._confound_lines(None, "constant_lr")))
    combos = list(itertools.product(AT_STEP, SERIES, SERIES, ([500], [500, 600])))
    for at, decayed, constant, starts in combos:
        conf = dict(precision="float32", at_step=AT_STEP[at], decay_starts=starts,
                    ratio_512_64=dict(decayed=SERIES[decayed], constant=SERIES[constant]))
        check_markdown("\n".join(ttt._confound_lines(conf, "constant_lr")))
    assert len(combos) == 72


def probe_target(bound: str) -> dict:
    """One IS target of probe(): steps per seed in each arm, censored where the bound says."""
    return dict(target=3.0, batch=512, probe=[300.0, 320.0], probe_censored=[
        bound in "<?", False], main=[400.0, 410.0], main_censored=[bound in ">?", False],
        steps_saved=math.nan if bound == "?" else 1.3, bound=bound)


def test_every_probe_arm_is_complete():
    done = dict(point="bs0512_seed0_probe", batch=512, seed=0, g_lr=4e-4, d_lr=4e-4,
                status="done", diverged_at=None, final_is=6.5)
    diverged = dict(done, point="bs0512_seed1_probe", seed=1, status="diverged",
                    diverged_at=300, final_is=None)
    combos = list(itertools.product(([done], [diverged], [done, diverged]),
                                    (None, "", ">", "<", "?")))
    for points, bound in combos:
        res = dict(points=points, targets=[] if bound is None else [probe_target(bound)])
        check_markdown("\n".join(ttt._probe_lines("probe", "constant_lr", res)))
    assert len(combos) == 15


COUPLING = {"shared": dict(bn_cross_replica=True), "per replica": dict(bn_cross_replica=False),
            "old save, shared": dict(command="noise-scale --batch-size 64"),
            "old save, per replica": dict(command="noise-scale --set "
                                                  "model.bn_cross_replica=false")}


BATCHES, STEPS = (16, 64, 128, 512), {16: 2400, 64: 1200, 128: 1000, 512: 800}


def arm_point(batch, seed, name, steps, value, every=100, b_simple=(4.0, 100.0),
              accuracy=True, decay=None, status="done", g_lr=2e-4) -> records.Point:
    """A time-to-target point in memory: IS `value(step)` every `every` steps."""
    cfg = configs.preset("fashion_mnist", {
        "train.global_batch_size": batch, "train.seed": seed, "train.steps": steps,
        "train.lr_decay_start": decay, "train.g_lr": g_lr})
    history = [Scores(step=s, images_seen=2 * batch * s, is_mean=value(s), is_std=0.1,
                      fid=1000 / value(s), kid_mean=0.01, kid_std=0.001, n_fake=500,
                      n_real=1000, protocol=PROTOCOL.replace(step=s),
                      accuracy=min(0.1 * value(s) - 0.1, 1.0) if accuracy else None,
                      b_simple_d=b_simple[0], b_simple_g=b_simple[1])
               for s in range(every, steps + 1, every)]
    done = status == "done"
    record = PointRecord(status=status, global_batch_size=batch, seed=seed, replicas=1,
                         bn_batch_per_replica=batch, bn_cross_replica=True, steps=steps,
                         images_seen=2 * batch * steps, train_wall_time_s=1.0,
                         final=history[-1] if done else None,
                         diverged_at=None if done else steps, point=name,
                         arm=records.arm_of_name(name), sweep_budget="equal_steps")
    return records.Point(os.path.join("points", name), cfg, record, history)


CURVES = {  # IS against steps: B_crit 100 at every target, or S ~ 1/B (B_crit at the bound)
    "b_crit 100": lambda b, seed: lambda s: 2 + s / (200 * (1 + 100 / b)) * (1 + 1e-3 * seed),
    "perfect scaling": lambda b, seed: lambda s: 2 + s * b / 20000 * (1 + 1e-3 * seed)}


def write_arms(sweep, arms: dict) -> None:
    for arm, steps in arms.items():
        (sweep / f"sweep.{arm}.json").write_text(json.dumps(
            {"arm": arm, "steps_by_batch": {str(b): s for b, s in steps.items()}}))


def test_every_time_to_target_section_is_complete(tmp_path, no_figures):
    """A full arm (B_crit inside or at the grid's bound; B_simple read or not; accuracy or
    not), with and without decayed-lr points and a probe arm; a lone small arm; no arm."""
    assert ttt.section(str(tmp_path), [], str(tmp_path / "r"), bootstrap=0) == ("", {})
    combos = list(itertools.product(CURVES, (True, False), (True, False), (True, False)))
    for i, (curve, read, decayed, extras) in enumerate(combos):
        sweep = tmp_path / str(i)
        os.makedirs(sweep)
        write_arms(sweep, {"constant_lr": STEPS, **({"probe": {512: 800}} if extras else {})})
        points = [arm_point(b, seed, f"bs{b:04d}_seed{seed}_constant_lr", STEPS[b],
                            CURVES[curve](b, seed), b_simple=(4.0, 100.0) if read else
                            (None, None), accuracy=extras)
                  for b in BATCHES for seed in (0, 1)]
        if decayed:
            points += [arm_point(b, seed, f"bs{b:04d}_seed{seed}_decayed", 1000,
                                 lambda s, b=b: 0.9 * CURVES[curve](b, 0)(s), every=200,
                                 decay=500) for b in (64, 512) for seed in (0, 1)]
        if extras:
            points += [arm_point(512, 0, "bs0512_seed0_probe", 800, CURVES[curve](1024, 0),
                                 g_lr=4e-4),
                       arm_point(512, 1, "bs0512_seed1_probe", 300, CURVES[curve](1024, 1),
                                 g_lr=4e-4, status="diverged")]
        md, result = ttt.section(str(sweep), points, str(sweep / "r"), bootstrap=0)
        assert "## Time to target: arm 'constant_lr'" in md
        check_markdown(md)
        assert result["constant_lr"]["headline"] in md
    assert len(combos) == 16
    for sizes in ((512,), (256, 512)):  # fewer than 3 batch sizes and no full arm
        sweep = tmp_path / f"small{len(sizes)}"
        os.makedirs(sweep)
        write_arms(sweep, {"probe": {b: 800 for b in sizes}})
        points = [arm_point(b, 0, f"bs{b:04d}_seed0_probe", 800, CURVES["b_crit 100"](b, 0))
                  for b in sizes]
        md, _ = ttt.section(str(sweep), points, str(sweep / "r"), bootstrap=0)
        assert len(check_markdown(md)) == 1


# -- analysis: verdicts, exact tests, trends, noise, plateaus ---------------------------------
EFFECTS = {"up": 1.4, "flat": 1.0, "down": 0.7}  # IS at batch 512 over batch 64


def study(seeds: int, replicates: bool, effect: str, accuracy: str, controls: str,
          extra_batch: bool) -> list[records.Point]:
    """Points at batch 64 and 512 (and 256), seed k offset by 0.1 k; even seeds' curves flat
    in their last interval. `accuracy`: every seed, none, or the first half of the seeds;
    `controls`: equal-images batch-64 points matching batch 512's images or not, or the whole
    sweep at equal images."""
    points = []
    budget = "equal_images" if controls == "whole sweep" else None
    for s in range(seeds):
        acc = 0.5 if accuracy == "all" or (accuracy == "half" and s < max(seeds // 2, 1)) \
            else None
        for b, gain in ((64, 1.0), (256, (1 + EFFECTS[effect]) / 2), (512, EFFECTS[effect])):
            if b == 256 and not extra_batch:
                continue
            v = 4.0 * gain + 0.1 * s
            points.append(make_point(
                b, s, v, 40.0 / gain + s, accuracy=None if acc is None else acc * gain,
                replicates=(v + 0.01, v - 0.02) if replicates else (), budget=budget,
                curve=[v - (0.01 if s % 2 == 0 else 1.0), v]))
        if controls in ("matched", "unmatched"):
            steps = 800 if controls == "matched" else 700
            points.append(make_point(64, s, 4.5 + 0.1 * s, 35.0 + s, accuracy=acc,
                                     steps=steps, budget="equal_images"))
    return points


@pytest.fixture
def fast_inputs(monkeypatch):
    """The pooled Spearman test's Monte Carlo resamples: fewer (the prose does not change);
    and each preset built once (RunConfig is frozen), since building them dominates here."""
    monkeypatch.setattr(st, "RESAMPLES", 500)
    preset, cache = configs.preset, {}

    def cached(name, overrides):
        key = (name, tuple(sorted(overrides.items())))
        return cache[key] if key in cache else cache.setdefault(key, preset(name, overrides))
    monkeypatch.setattr(configs, "preset", cached)


def test_every_analysis_section_is_complete(fast_inputs):
    combos = [c for c in itertools.product((1, 3, 6), (False, True), EFFECTS,
                                           ("all", "none", "half"),
                                           ("none", "unmatched", "matched", "whole sweep"),
                                           (False, True))
              # replicates matter with one seed only; batch 256 (the trend lines) with no
              # controls and up to 3 seeds
              if not (c[1] and c[0] > 1) and not (c[5] and (c[0] == 6 or c[4] != "none"))]
    for combo in combos:
        md = analysis.analysis_markdown(analysis.analyse(study(*combo)))
        check_markdown(md)
        # an exact-test line speaks only for the tests it names
        assert not ("Exact test not run:" in md and "Exact test (Mann-Whitney" in md), combo
    assert len(combos) == 3 * 3 * (4 * 4 + 3)
    for only in (64, 512):  # no comparison to make
        md = analysis.analysis_markdown(analysis.analyse(
            [make_point(only, s, 4.0 + 0.1 * s, 40.0) for s in range(2)]))
        check_markdown(md)


def test_an_exact_test_line_names_the_metrics_it_could_not_test(fast_inputs):
    md = analysis.analysis_markdown(analysis.analyse(
        study(6, False, "up", "half", "none", False)))
    assert "- Exact test (Mann-Whitney U, two-sided, distribution-free): IS U = " in md
    assert "- Exact test not run for conditional accuracy: 3 vs 3 seeds cannot reach" in md


def test_every_plateau_and_noise_line_is_complete():
    """The plateau lines (one seed, or a spread with one or more curves, flattened or not) and
    the noise lines (one batch size or point, or several) from hand-made results."""
    empty = dict(comparisons=[], equal_images_note=None, trends={}, seed_spread={},
                 evaluation_noise={}, plateau=[])
    patterns = [(True,), (False,), (True, False), (False, False), (True, True, False)]
    combos = list(itertools.product((None, 0.05), patterns))
    for sd, flat in combos:
        curves = [dict(seed=k, from_step=50, to_step=100, is_change=0.01 if f else 1.0,
                       flattened=None if sd is None else f) for k, f in enumerate(flat)]
        group = dict(budget="equal_steps", batch=64, steps=100, seed_sd=sd, curves=curves)
        check_markdown(analysis.analysis_markdown(dict(empty, plateau=[group])))
    spreads = [None, dict(batch_sizes=1, median_cv=0.02, min_cv=0.02, max_cv=0.02),
               dict(batch_sizes=3, median_cv=0.02, min_cv=0.01, max_cv=0.03)]
    noises = [None, dict(points=1, median_cv=0.005, max_cv=0.005),
              dict(points=4, median_cv=0.005, max_cv=0.01)]
    for s, e in itertools.product(spreads, noises):
        check_markdown(analysis.analysis_markdown(dict(
            empty, seed_spread={m: s for m in analysis.NAMES},
            evaluation_noise={m: e for m in analysis.NAMES})))
    assert len(combos) + len(spreads) * len(noises) == 19


def test_every_trend_line_is_complete():
    """Two batch sizes (no test on the means, no lack of fit), three with and without seeds
    to test the line's fit by, and seven pooled seeds (the Monte Carlo p at its floor)."""
    trends = [st.trend_test([64, 64, 512, 512], [4.0, 4.1, 5.0, 5.2], 64),
              st.trend_test([64, 256, 512], [4.0, 4.5, 5.0], 64),
              st.trend_test([64, 64, 256, 256, 512, 512], [4.0, 4.1, 4.2, 4.4, 5.0, 5.1], 64),
              st.trend_test([8, 16, 32, 64, 128, 256, 512] * 3,
                            [3 + 0.5 * i + 0.1 * s for s in range(3) for i in range(7)], 64)]
    assert trends[-1].spearman_p_at_floor and trends[1].lines[0]["lack_of_fit_p"] is None
    for t, metric in itertools.product(trends, analysis.NAMES):
        check_markdown("\n".join(analysis._trend_lines(metric, t.to_dict())))


# -- statistics.verdict -----------------------------------------------------------------------
INTERVALS = {"improves": ([4.0, 4.1, 4.2], [6.0, 6.1, 6.3]),
             "worsens": ([4.0, 4.1, 4.2], [3.0, 3.1, 3.2]),
             "straddles": ([4.0, 4.1, 4.2], [4.0, 4.3, 3.9]),
             "no spread": ([4.0, 4.0], [5.0, 5.0]), "one value": ([4.0], [5.0])}


def test_every_verdict_is_complete():
    combos = list(itertools.product(INTERVALS, ((1, 1), (1, 3), (3, 3)), (None, 50.0),
                                    (None, 0.01, 0.3), ("", "at equal steps"), (True, False)))
    for kind, seeds, paper, adjusted, label, higher in combos:
        interval = st.welch_ratio(*INTERVALS[kind])
        v = st.verdict("IS", interval, higher, 64, 512, seeds, paper, adjusted, label=label)
        assert_complete(v.text)
    assert len(combos) == 360


# -- precision_check --------------------------------------------------------------------------
def in_precision(point: records.Point, precision: str) -> records.Point:
    cfg = point.config.with_overrides({"train.precision": precision})
    name = os.path.basename(point.dir) + "_" + precision
    return dataclasses.replace(point, config=cfg,
                               dir=os.path.join(os.path.dirname(point.dir), name))


def test_every_precision_note_and_check_is_complete(fast_inputs):
    """float32 seeds: none, one or three; bfloat16 seeds: none, one, three or one without a
    twin; a shift within or beyond the seed spread; accuracy or not; and a bfloat16 point of
    other settings (no twin) or not."""
    combos = list(itertools.product(((), (0,), (0, 1, 2)), ((), (0,), (0, 1, 2), (7,)),
                                    (0.01, 1.0), (0.5, None), (False, True)))
    for f32_seeds, reduced_seeds, shift, acc, other in combos:
        points = [make_point(64, s, 4.0 + 0.1 * s, 40.0 + s, accuracy=acc) for s in f32_seeds]
        points += [in_precision(make_point(64, s, 4.0 + 0.1 * s + shift, 40.0 + s,
                                           accuracy=acc), "bfloat16") for s in reduced_seeds]
        if other:
            points.append(in_precision(make_point(64, 0, 4.0, 40.0, steps=200), "bfloat16"))
        _, note = precision_check.split_by_precision(points)
        if note is not None:
            assert_complete(note)
        md = precision_check.precision_check_markdown(points)
        if md:
            check_markdown(md)
    assert len(combos) == 96


def test_one_float32_seed_is_not_called_unmoved():
    """With one float32 seed there is no spread to judge a shift by: said, not 'no score
    moves'."""
    one = [make_point(64, 0, 4.0, 40.0), in_precision(make_point(64, 0, 9.0, 40.0), "bfloat16")]
    md = precision_check.precision_check_markdown(one)
    assert "No shift can be judged: each comparison has one float32 seed" in md
    assert "No score moves" not in md


# -- tables: the protocol line and the footnote -----------------------------------------------
def test_the_protocol_line_and_footnote_are_complete():
    assert_complete(tables.FOOTNOTE)
    for points in ([], [make_point(64, 0, 4.0, 40.0, status="diverged")],
                   [make_point(64, 0, 4.0, 40.0)],
                   [make_point(64, s, 4.0, 40.0) for s in range(3)]):
        assert_complete(tables.protocol_text(points))
