"""The report's time-to-target section on a synthetic sweep whose critical batch is known.

Each curve rises linearly, IS = 2 + step / (200 (1 + 100 / B)), so IS T is crossed at
S = 200 (T - 2)(1 + 100 / B): S_min = 200 (T - 2) and B_crit = 100 at every target."""
import json
import os

import pytest
from fake_results import PROTOCOL

from common import files
from experiments import configs, records
from experiments.config import StudyComparison
from experiments.records import PointRecord, Scores
from experiments.reporting.lib import placement as pl
from experiments.reporting.lib import plots
from experiments.reporting.report import write_report
from experiments.reporting.sections import schedule
from experiments.reporting.sections import time_to_target as ttt
from experiments.reporting.study import Study

B_CRIT = 100.0
STEPS = {16: 2400, 64: 1200, 128: 1000, 256: 900, 512: 800}


def _write(root, name, overrides, every, scale):
    cfg = configs.preset("fashion_mnist", {"train.precision": "bfloat16", **overrides})
    t = cfg.train
    b, steps = t.global_batch_size, t.steps
    value = [scale * (2 + s / (200 * (1 + B_CRIT / b)) * (1 + 0.001 * t.seed))
             for s in range(every, steps + 1, every)]
    history = [Scores(step=s, images_seen=2 * b * s, is_mean=v, is_std=0.1, fid=1000 / v,
                      kid_mean=0.01, kid_std=0.001, n_fake=500, n_real=1000,
                      protocol=PROTOCOL.replace(step=s), accuracy=min(0.1 * v - 0.1, 1.0),
                      b_simple_d=4.0, b_simple_g=100.0)
               for s, v in zip(range(every, steps + 1, every), value)]
    run_dir = os.path.join(root, "points", name)
    records.write_config(run_dir, cfg)
    records.write_history(run_dir, history)
    records.write_record(run_dir, PointRecord(
        status="done", global_batch_size=b, seed=t.seed, replicas=1, bn_batch_per_replica=b,
        bn_cross_replica=True, steps=steps, images_seen=2 * b * steps, train_wall_time_s=1.0,
        final=history[-1], point=name, sweep_budget="equal_steps"))


@pytest.fixture
def sweep(tmp_path):
    """The constant-lr arm (5 batch sizes x 3 seeds) and decayed-lr points at 64 and 512 that
    score 0.9x, for the schedule confound."""
    root = str(tmp_path)
    for seed in (0, 1, 2):
        for b, steps in STEPS.items():
            _write(root, f"bs{b:04d}_seed{seed}_constant_lr", {
                "train.global_batch_size": b, "train.seed": seed, "train.steps": steps,
                "train.lr_decay_start": None}, 100, 1.0)
        for b in (64, 512):
            _write(root, f"bs{b:04d}_seed{seed}_bfloat16", {
                "train.global_batch_size": b, "train.seed": seed, "train.steps": 1000,
                "train.lr_decay_start": 500}, 200, 0.9)
    files.atomic_write_json(os.path.join(root, "sweep.constant_lr.json"), {
        "arm": "constant_lr", "steps_by_batch": {str(b): s for b, s in STEPS.items()}})
    return root


def sections_of(sweep, bootstrap):
    """The time-to-target and schedule sections' results, the figures drawn."""
    study = Study.load(sweep, os.path.join(sweep, "report"), bootstrap=bootstrap)
    results = {}
    for section in (ttt, schedule):
        results[section.KEY] = section.compute(study, results)
    ttt.draw(results[ttt.KEY], study)
    return results


def test_the_section_recovers_the_known_critical_batch(sweep):
    results = sections_of(sweep, bootstrap=200)
    arm = results[ttt.KEY]["constant_lr"]
    rows = arm.metrics["is_mean"]
    assert [r.target for r in rows][:3] == [3.0, 3.5, 4.0]
    for r in rows:
        assert r.fit.b_crit == pytest.approx(B_CRIT, rel=0.01), r.target
        assert r.fit.s_min == pytest.approx(200 * (r.target - 2), rel=0.01)
        assert r.fit.e_min == pytest.approx(2 * r.fit.s_min * r.fit.b_crit, rel=1e-6)
    # steps saved 64 -> 512: (1 + 100/64) / (1 + 100/512), images spent 8 / that
    up = next(u for u in rows[0].speedups if u.batch == 512)
    want = (1 + B_CRIT / 64) / (1 + B_CRIT / 512)
    assert up.steps_saved == pytest.approx(want, rel=0.01)
    assert up.images_spent == pytest.approx(8 / want, rel=0.01)
    # the headline: IS 4.0, the highest batch 64 reaches (2 + 1200 / 512.5 = 4.34 at its end)
    head = arm.headline
    assert (head.target, head.baseline_batch, head.target_batch) == (4.0, 64, 512)
    assert head.b_crit == pytest.approx(B_CRIT, rel=0.01)
    # the noise scale read at the crossings: G's 100 sits on B_crit, D's 4 far below
    assert rows[0].b_simple["g"].geomean == pytest.approx(100)
    noise, n = arm.noise_scale, len(rows)
    assert (noise.g.inside, noise.d.below, noise.d.n, noise.targets) == (n, n, n, n)
    assert noise.b_crit_change == pl.WITHIN
    # the schedule confound: the decayed points score 0.9x at step 1,000
    conf = results[schedule.KEY]
    assert conf.at_step["64"].ratio.ratio == pytest.approx(1 / 0.9, rel=1e-3)
    assert set(conf.ratio_target_to_baseline["decayed"]) == {"200", "400", "600", "800", "1000"}
    for name, _ in plots.TIME_TO_TARGET_FIGURES:
        assert os.path.exists(os.path.join(sweep, "report", f"constant_lr_{name}"))


def test_a_target_some_batch_never_reaches_is_censored_and_still_fitted(sweep):
    rows = sections_of(sweep, bootstrap=0)[ttt.KEY]["constant_lr"].metrics["is_mean"]
    # batch 16 reaches IS 2 + 2400 / (200 * 7.25) = 3.66 at its last step
    late = next(r for r in rows if r.target == 4.0)
    assert [(c.step, c.censored) for c in late.crossings["16"]] == [(2400.0, True)] * 3
    assert late.reaching == [64, 128, 256, 512]
    assert late.fit.censored[0] is True and late.fit.b_crit == pytest.approx(B_CRIT, rel=0.01)


def _keys(data):
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in _keys(v)}
    return {k for v in data for k in _keys(v)} if isinstance(data, list) else set()


def _report(sweep, comparison=None):
    """(rows, typed results, analysis.json, report.md) of a full report of the sweep."""
    out = write_report(sweep, comparison, bootstrap=0)
    with open(os.path.join(sweep, "report", "analysis.json")) as f:
        return out["rows"], out["results"], json.load(f), out["markdown"]


def test_the_report_writes_the_typed_results_and_takes_the_comparison_from_the_config(sweep):
    rows, typed, default, _ = _report(sweep)
    assert sorted(r["batch"] for r in rows) == [64, 512]  # the arm is kept out of the table
    fit = typed[ttt.KEY]["constant_lr"].metrics["is_mean"][0].fit
    assert default[ttt.KEY]["constant_lr"]["metrics"]["is_mean"][0]["fit"]["b_crit"] == fit.b_crit
    moved = StudyComparison(baseline_batch=128, target_batch=256, bigger_batches=(256, 512),
                            schedule_step=1000)
    _, _, a, md = _report(sweep, moved)
    assert "vs 64" not in md and "64 ->" not in md
    arm = a[ttt.KEY]["constant_lr"]
    assert {(u["base"], u["batch"]) for r in arm["metrics"]["is_mean"] for u in r["speedups"]} \
        == {(128, 256), (128, 512)}
    assert (arm["headline"]["baseline_batch"], arm["headline"]["target_batch"]) == (128, 256)
    conf = a[schedule.KEY]
    assert (conf["baseline_batch"], conf["target_batch"]) == (128, 256)
    assert conf["ratio_target_to_baseline"]["decayed"] == {}  # decayed: 64 and 512 only
    # the keys are neutral: the same names whichever batches are compared (numbers are data)
    assert {k for k in _keys(a) if not k.isdigit()} <= _keys(default)
    assert not [k for k in _keys(default) | set(rows[0])
                if any(f"{n}_" in k or f"_{n}" in k for n in ("64", "512"))]
