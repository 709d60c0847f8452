"""The whole report from synthetic records: files written, both comparisons, and a report that
states what it cannot compute rather than failing."""
import json
import os

import numpy as np
import pytest
from fake_results import fake_point

from experiments import records
from experiments.reporting import report

ARMS = ((16, 3.0, 80.0), (64, 4.0, 40.0), (512, 6.0, 20.0))


def test_report_tables_plots_and_comparison(tmp_path):
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
    gmean = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
    assert rows[512]["is_change_vs_baseline"] == pytest.approx(
        100 * (gmean([6.0, 6.2]) / gmean([4.0, 4.2]) - 1))
    assert rows[512]["fid_change_vs_baseline"] == pytest.approx(
        100 * (gmean([20.0, 22.0]) / gmean([40.0, 42.0]) - 1))
    assert rows[512]["is_ratio_ci"]["method"].startswith("Welch")
    assert rows[128]["diverged"] == 1 and rows[128]["is_mean"] is None
    md = (tmp_path / "report" / "report.md").read_text()
    assert md == out["markdown"]
    assert "| 512 | 2 | 6.10 ± 0.14 |" in md and "IS vs 64 [95% CI]" in md
    assert "Protocol: fashion_mnist_classifier" in md and "500 generated vs 1000 real" in md
    assert "## Signal and noise" in md and "### Equal steps (the paper's)" in md
    assert "No equal-images control points in this sweep" in md
    assert "\\pm" in (tmp_path / "report" / "table.tex").read_text()
    assert (tmp_path / "report" / "table.csv").read_text().startswith("batch,")
    for name in ("is_fid_vs_batch", "curves_vs_steps", "curves_vs_images", "comparison"):
        for ext in ("png", "pdf"):
            assert (tmp_path / "report" / f"{name}.{ext}").stat().st_size > 1000
    assert not (tmp_path / "report" / "equal_images.png").exists()
    saved = json.loads((tmp_path / "report" / "analysis.json").read_text())
    assert saved["verdicts"]["target_batch"] == 512 and len(saved["verdicts"]["comparisons"]) == 1


def test_report_is_deterministic(tmp_path):
    root = str(tmp_path)
    for seed in range(3):
        for batch, is_mean, fid in ARMS:
            fake_point(root, batch, seed, is_mean + 0.1 * seed, fid - seed)
    first = report.write_report(root)
    names = ("report.md", "analysis.json", "summary.json", "table.csv", "is_fid_vs_batch.png",
             "is_fid_vs_batch.pdf", "curves_vs_steps.pdf")  # PDFs carry no creation date
    saved = {n: (tmp_path / "report" / n).read_bytes() for n in names}
    second = report.write_report(root)
    assert first["markdown"] == second["markdown"]
    for name, data in saved.items():
        assert (tmp_path / "report" / name).read_bytes() == data, name


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
    steps, images = out["analysis"]["verdicts"]["comparisons"]
    assert (steps["name"], images["name"]) == ("equal_steps", "equal_images")
    assert images["baseline"]["steps"] == 800 and images["target"]["steps"] == 100
    assert images["baseline"]["images_seen"] == images["target"]["images_seen"] == 102_400
    gm = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
    assert images["metrics"]["is"]["interval"]["ratio"] == pytest.approx(
        gm([6.0, 6.1, 6.2]) / gm([5.5, 5.6, 5.7]))
    md = out["markdown"]
    assert "### Equal images: batch 64 x 800 steps vs batch 512 x 100 steps" in md
    assert "IS (batch 64 -> 512, at equal images): direction reproduced." in md
    assert "No equal-images control points" not in md
    assert "batch 64 x 800 steps (at equal images)" in md  # its plateau line
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
    verdicts = {v["metric"]: v for v in out["analysis"]["verdicts"]["comparisons"][0]["verdicts"]}
    assert verdicts["is"]["direction"] == "no verdict: one training seed (evaluation noise only)"
    md = (tmp_path / "report" / "report.md").read_text()
    assert "no verdict: one training seed (evaluation noise only)" in md
    assert "direction reproduced" not in md
    assert "baseline" in md and "0.500" in md and "0.50 / 0.40" in md
    assert out["analysis"]["verdicts"]["evaluation_noise"]["is"]["points"] == 3
    assert out["analysis"]["verdicts"]["seed_spread"]["is"] is None
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
    assert "No verdict: it needs finished points at batch 64 and a larger batch." \
        in out["markdown"]
