"""The whole report from synthetic records: files written, both comparisons, and a report that
states what it cannot compute rather than failing."""
import json
import os

import numpy as np
import pytest
from fake_results import fake_point
from scipy.stats import gmean

from experiments import records
from experiments.reporting import report

ARMS = ((16, 3.0, 80.0), (64, 4.0, 40.0), (512, 6.0, 20.0))


def test_report_tables_plots_comparison_and_determinism(tmp_path):
    root = str(tmp_path)
    for seed, jitter in ((0, 0.0), (1, 0.2)):
        for batch, is_mean, fid in ARMS:
            fake_point(root, batch, seed, is_mean + jitter, fid + 10 * jitter)
    fake_point(root, 128, 0, 0, 0, status="diverged")
    out = report.write_report(root)
    rows = {r["batch"]: r for r in out["rows"]}
    assert rows[64]["is_mean"] == pytest.approx(4.1)
    assert rows[64]["is_std"] == pytest.approx(np.std([4.0, 4.2], ddof=1))
    # changes are ratios of geometric means, on the scale of their Welch interval
    assert rows[512]["is_change_vs_baseline"] == pytest.approx(
        100 * (gmean([6.0, 6.2]) / gmean([4.0, 4.2]) - 1))
    assert rows[512]["fid_change_vs_baseline"] == pytest.approx(
        100 * (gmean([20.0, 22.0]) / gmean([40.0, 42.0]) - 1))
    assert rows[512]["is_ratio_ci"]["method"].startswith("Welch")
    assert rows[128]["diverged"] == 1 and rows[128]["is_mean"] is None
    saved = {n: (tmp_path / "report" / n).read_text() for n in
             ("report.md", "summary.json", "analysis.json", "table.tex", "table.csv")}
    assert saved["report.md"] == out["markdown"] and json.loads(saved["summary.json"]) == out[
        "rows"]
    assert "| 512 | 2 | 6.10 ± 0.14 |" in saved["report.md"] and "\\pm" in saved["table.tex"]
    assert saved["table.csv"].startswith("batch,")
    for name in ("is_fid_vs_batch", "curves_vs_steps", "curves_vs_images", "comparison"):
        for ext in ("png", "pdf"):
            assert (tmp_path / "report" / f"{name}.{ext}").stat().st_size > 1000
    assert not (tmp_path / "report" / "equal_images.png").exists()
    verdicts = json.loads(saved["analysis.json"])["verdicts"]
    assert verdicts["target_batch"] == 512 and len(verdicts["comparisons"]) == 1
    assert verdicts["equal_images_note"].startswith("No equal-images control points")
    pdf = (tmp_path / "report" / "curves_vs_steps.pdf").read_bytes()  # PDFs carry no date
    report.write_report(root)  # the same files again, byte for byte
    assert pdf == (tmp_path / "report" / "curves_vs_steps.pdf").read_bytes()
    assert saved == {n: (tmp_path / "report" / n).read_text() for n in saved}


def test_equal_images_controls_get_their_own_comparison_and_figure(tmp_path):
    """Batch 64 x 800 steps (labelled equal_images) sees what batch 512 x 100 steps sees; the
    table keeps the equal-steps points, and the controls are compared with batch 512."""
    root = str(tmp_path)
    for seed in range(3):
        for batch, is_mean, fid in ARMS:
            fake_point(root, batch, seed, is_mean + 0.1 * seed, fid - seed, accuracy=0.5,
                       evals=4)
        fake_point(root, 64, seed, 5.5 + 0.1 * seed, 25.0, accuracy=0.6, steps=800,
                   budget="equal_images", evals=8)
    out = report.write_report(root)
    assert [r["batch"] for r in out["rows"]] == [16, 64, 512]
    assert out["rows"][1]["steps"] == 100 and out["rows"][1]["seeds"] == 3  # no control inside
    verdicts = out["analysis"]["verdicts"]
    steps, images = verdicts["comparisons"]
    assert (steps["name"], images["name"]) == ("equal_steps", "equal_images")
    assert images["baseline"]["steps"] == 800 and images["target"]["steps"] == 100
    assert images["baseline"]["images_seen"] == images["target"]["images_seen"] == 102_400
    assert images["metrics"]["is"]["interval"]["ratio"] == pytest.approx(
        gmean([6.0, 6.1, 6.2]) / gmean([5.5, 5.6, 5.7]))
    assert images["verdicts"][0]["direction"] == "reproduced"
    assert verdicts["equal_images_note"] is None
    assert ("equal_images", 64, 800) in {(g["budget"], g["batch"], g["steps"])
                                         for g in verdicts["plateau"]}
    assert "| 64 x 800 (equal images) |" not in out["markdown"]  # no other BN mode scored
    for ext in ("png", "pdf"):
        assert (tmp_path / "report" / f"equal_images.{ext}").stat().st_size > 1000


def test_one_seed_report_gives_no_verdict(tmp_path):
    """One training seed: intervals come from evaluation seeds, and no verdict is drawn."""
    root = str(tmp_path)
    fake_point(root, 64, 0, 4.0, 40.0, accuracy=0.5, replicates=(4.05, 3.95))
    fake_point(root, 512, 0, 6.0, 20.0, accuracy=0.7, replicates=(6.05, 5.95))
    fake_point(root, 128, 0, 5.0, 30.0, accuracy=0.6, replicates=(5.05, 4.95))
    out = report.write_report(root)
    rows = {r["batch"]: r for r in out["rows"]}
    assert rows[512]["is_ratio_ci"]["method"].endswith("(one training seed)")
    assert rows[512]["is_ratio_ci"]["low"] > 1.4 and rows[512]["acc"] == pytest.approx(0.7)
    assert rows[64]["is_std"] == pytest.approx(np.std([4.0, 4.05, 3.95], ddof=1))
    assert rows[64]["is_std_kind"] == "evaluation seeds"
    verdicts = out["analysis"]["verdicts"]
    assert {v["direction"] for v in verdicts["comparisons"][0]["verdicts"]} == {
        "no verdict: one training seed (evaluation noise only)"}
    assert verdicts["evaluation_noise"]["is"]["points"] == 3
    assert verdicts["seed_spread"]["is"] is None
    assert "is_ratio_low" in (tmp_path / "report" / "table.csv").read_text().splitlines()[0]


def test_other_bn_modes_are_reported_beside_the_main_one(tmp_path):
    root = str(tmp_path)
    fake_point(root, 64, 0, 4.0, 40.0, accuracy=0.5)
    run = os.path.join(root, "points", "bs0064_seed0")
    record = records.read_record(run)
    moving = record.final.replace(is_mean=3.5, fid=45.0, accuracy=0.4,
                                  protocol=record.final.protocol.replace(bn_mode="moving"))
    records.write_record(run, record.replace(evaluations={"tiny/moving": moving}))
    out = report.write_report(root)
    assert out["rows"][0]["other_bn_modes"] == {
        "moving": dict(seeds=1, is_mean=3.5, fid=45.0, acc=0.4)}
    assert "| 64 | moving | 1 | 3.50 | 45.00 | 0.400 |" in out["markdown"]
    # one seed, one evaluation: IS's sd over its splits, KID's over its subsets
    assert (out["rows"][0]["is_std_kind"], out["rows"][0]["is_std"]) == ("splits", 0.1)
    assert out["rows"][0]["kid_std"] == 0.001
    assert out["analysis"]["verdicts"]["comparisons"] == []  # nothing to compare batch 64 with
