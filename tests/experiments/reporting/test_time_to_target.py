"""The report's time-to-target section on a synthetic sweep whose critical batch is known.

Each curve rises linearly, IS = 2 + step / (200 (1 + 100 / B)), so IS T is crossed at
S = 200 (T - 2)(1 + 100 / B): S_min = 200 (T - 2) and B_crit = 100 at every target."""
import json
import math
import os

import pytest
from fake_results import PROTOCOL, noise_scale_run

from common import files
from experiments import configs, records, sweep_files
from experiments.config import StudyComparison
from experiments.records import PointRecord, Scores
from experiments.reporting.lib import plots
from experiments.reporting.report import write_report
from experiments.reporting.sections import schedule
from experiments.reporting.sections import time_to_target as ttt
from experiments.reporting.study import Study

B_CRIT = 100.0
BATCHES = (16, 64, 128, 256, 512)
STEPS = {16: 2400, 64: 1200, 128: 1000, 256: 900, 512: 800}


def _is(batch, step, seed):
    return 2 + step / (200 * (1 + B_CRIT / batch)) * (1 + 0.001 * seed)


def _write(root, name, cfg, steps, every, value, b_simple=(4.0, 100.0)):
    history = [Scores(step=s, images_seen=2 * cfg.train.global_batch_size * s,
                      is_mean=value(s), is_std=0.1, fid=1000 / value(s), kid_mean=0.01,
                      kid_std=0.001, n_fake=500, n_real=1000, protocol=PROTOCOL.replace(step=s),
                      accuracy=min(0.1 * value(s) - 0.1, 1.0), b_simple_d=b_simple[0],
                      b_simple_g=b_simple[1])
               for s in range(every, steps + 1, every)]
    t = cfg.train
    record = PointRecord(status="done", global_batch_size=t.global_batch_size, seed=t.seed,
                         replicas=1, bn_batch_per_replica=t.global_batch_size,
                         bn_cross_replica=True, steps=steps,
                         images_seen=2 * t.global_batch_size * steps, train_wall_time_s=1.0,
                         final=history[-1], point=name, sweep_budget="equal_steps")
    run_dir = os.path.join(root, "points", name)
    records.write_config(run_dir, cfg)
    records.write_history(run_dir, history)
    records.write_record(run_dir, record)


@pytest.fixture
def sweep(tmp_path):
    root = str(tmp_path)
    for seed in (0, 1, 2):
        for b in BATCHES:
            cfg = configs.preset("fashion_mnist", {
                "train.global_batch_size": b, "train.seed": seed, "train.steps": STEPS[b],
                "train.precision": "bfloat16", "train.lr_decay_start": None})
            _write(root, f"bs{b:04d}_seed{seed}_constant_lr", cfg, STEPS[b], 100,
                   lambda s, b=b, seed=seed: _is(b, s, seed))
        for b in (64, 512):  # the decayed-lr design at 1,000 steps, same precision
            cfg = configs.preset("fashion_mnist", {
                "train.global_batch_size": b, "train.seed": seed, "train.steps": 1000,
                "train.precision": "bfloat16", "train.lr_decay_start": 500})
            _write(root, f"bs{b:04d}_seed{seed}_bfloat16", cfg, 1000, 200,
                   lambda s, b=b, seed=seed: 0.9 * _is(b, s, seed))
    files.atomic_write_json(os.path.join(root, "sweep.constant_lr.json"),
                            {"arm": "constant_lr", "steps_by_batch": {str(b): s for b, s in
                                                                      STEPS.items()}})
    return root


def sections_of(sweep, bootstrap):
    """(time to target's Markdown, every result) of the sweep, its figures drawn."""
    study = Study.load(sweep, os.path.join(sweep, "report"), bootstrap=bootstrap)
    results = {}
    for section in (ttt, schedule):
        results[section.KEY] = section.compute(study, results)
    ttt.draw(results[ttt.KEY], study)
    return ttt.render(results[ttt.KEY], study), results


def test_the_section_recovers_the_known_critical_batch(sweep):
    md, results = sections_of(sweep, bootstrap=200)
    arm = results["time_to_target"]["constant_lr"]
    rows = arm["metrics"]["is_mean"]
    assert [r["target"] for r in rows][:3] == [3.0, 3.5, 4.0]
    for r in rows:
        f = r["fit"]
        assert f["b_crit"] == pytest.approx(B_CRIT, rel=0.01), r["target"]
        assert f["s_min"] == pytest.approx(200 * (r["target"] - 2), rel=0.01)
        assert f["e_min"] == pytest.approx(2 * f["s_min"] * f["b_crit"], rel=1e-6)
    # steps saved 64 -> 512: (1 + 100/64) / (1 + 100/512), images spent 8 / that
    up = next(u for u in rows[0]["speedups"] if u["batch"] == 512)
    want = (1 + B_CRIT / 64) / (1 + B_CRIT / 512)
    assert up["steps_saved"] == pytest.approx(want, rel=0.01)
    assert up["images_spent"] == pytest.approx(8 / want, rel=0.01)
    head = arm["headline"]
    assert (head["baseline_batch"], head["target_batch"]) == (64, 512)
    assert head["b_crit"] == pytest.approx(B_CRIT, rel=0.01)
    assert "**8x the batch (64 -> 512): steps saved to IS" in md
    # the noise scale read at the crossings: G's 100 sits on B_crit, D's 4 far below
    assert rows[0]["b_simple"]["g"]["geomean"] == pytest.approx(100)
    noise, n = arm["noise_scale"], len(rows)
    assert (noise["g"]["inside"], noise["d"]["below"], noise["d"]["n"]) == (n, n, n)
    assert noise["b_crit_change"] == "within its intervals"
    assert f"D's B_simple against the B_crit interval: below at {n} of {n} targets" in md
    # the schedule confound: the decayed points score 0.9x at step 1,000
    conf = results["schedule_confound"]
    assert conf["at_step"]["64"]["ratio"]["ratio"] == pytest.approx(1 / 0.9, rel=1e-3)
    assert set(conf["ratio_target_to_baseline"]["decayed"]) == {"200", "400", "600", "800",
                                                                "1000"}
    for key in plots.FIGURES:
        assert os.path.exists(os.path.join(sweep, "report", plots.arm_figure("constant_lr", key)))


def test_a_target_some_batch_never_reaches_is_shown_censored(sweep):
    md, results = sections_of(sweep, bootstrap=0)
    rows = results["time_to_target"]["constant_lr"]["metrics"]["is_mean"]
    # batch 16 reaches IS 2 + 2400 / (200 * 7.25) = 3.66 at its last step
    late = next(r for r in rows if r["target"] == 4.0)
    assert all(c["censored"] for c in late["crossings"]["16"])
    assert late["fit"]["censored"][0] is True
    assert "0/3 seeds (> 2400 censored)" in md


def test_the_report_keeps_the_arm_out_of_the_main_tables(sweep):
    out = write_report(sweep, bootstrap=0)
    assert "## Time to target: arm 'constant_lr'" in out["markdown"]
    assert "time_to_target" in out["analysis"]
    # only the decayed points make the batch table
    assert sorted(r["batch"] for r in out["rows"]) == [64, 512]
    with open(os.path.join(sweep, "report", "analysis.json")) as f:
        saved = json.load(f)
    assert not math.isnan(saved["time_to_target"]["constant_lr"]["metrics"]["is_mean"][0]
                          ["fit"]["b_crit"])


def test_the_estimators_coupling_runs_are_listed(sweep):
    def run(name, source, g, **extra):
        def est(b, low, high):
            return dict(measurements=30, window_start=150, b_simple=b, ci_low=low,
                        ci_high=high, ema_mean=b, ema_std=1.0)
        ns = dict(estimator="B_simple", source=source, every=5, ema_decay=0.9,
                  window_fraction=0.5, batches={}, d=est(4.0, 3.0, 5.0), g=est(g, g / 2, g * 2))
        files.atomic_write_json(os.path.join(sweep, sweep_files.NOISE_SCALE_RUNS, "coupling",
                                             name), noise_scale_run(64, 300, ns, **extra))
        if name == "a_shared.json":  # a measurement for the section to be about
            files.atomic_write_json(os.path.join(sweep, sweep_files.NOISE_SCALE_RUNS, name),
                                    noise_scale_run(64, 300, ns, **extra))
    run("a_shared.json", "2 slices", 66.0)
    run("b_local.json", "replicas", 55.0, bn_cross_replica=False)
    md = write_report(sweep, bootstrap=0)["markdown"]
    assert ("- a_shared.json: batch 64, 300 steps, small batches from 2 slices, BN "
            "statistics shared: B_simple D 4 [3, 5], G 66 [33, 132].") in md
    assert "b_local.json: batch 64, 300 steps, small batches from replicas, BN statistics " \
        "per replica: B_simple D 4 [3, 5], G 55 [28, 110]." in md


def _keys(data, out=None):
    out = set() if out is None else out
    if isinstance(data, dict):
        for k, v in data.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(data, list):
        for v in data:
            _keys(v, out)
    return out


def test_the_comparison_comes_from_the_config(sweep):
    moved = StudyComparison(baseline_batch=128, target_batch=256, bigger_batches=(256, 512),
                            schedule_step=1000)
    a, b = write_report(sweep, moved, bootstrap=0), write_report(sweep, bootstrap=0)
    md = a["markdown"]
    assert "| 128 -> 256: steps saved | images spent | 128 -> 512: steps saved |" in md
    assert "IS vs 128 [95% CI]" in md and "vs 64" not in md and "64 ->" not in md
    assert "**2x the batch (128 -> 256): steps saved to IS" in md
    ttt_a = a["analysis"]["time_to_target"]["constant_lr"]
    assert {u["base"] for r in ttt_a["metrics"]["is_mean"] for u in r["speedups"]} == {128}
    conf = a["analysis"]["schedule_confound"]
    assert (conf["baseline_batch"], conf["target_batch"]) == (128, 256)
    assert conf["ratio_target_to_baseline"]["decayed"] == {}  # decayed: 64 and 512 only
    assert "IS ratio batch 256 / batch 128" in md
    # the keys are neutral: the same names whichever batches are compared (numbers are data:
    # batch sizes and steps)
    names = [{k for k in _keys(r["analysis"]) if not k.isdigit()} for r in (a, b)]
    assert names[0] <= names[1]  # (batch 128 has no decayed points: no verdicts there)
    assert not [k for k in _keys(b["analysis"]) | set(b["rows"][0])
                if any(f"{n}_" in k or f"_{n}" in k for n in ("64", "512"))]
