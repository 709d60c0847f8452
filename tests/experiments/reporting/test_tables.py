"""The batch table in Markdown, CSV and LaTeX: cells, intervals with df, footnote, protocol."""
import csv
import io

import pytest
from fake_results import make_point

from experiments.reporting.sections import batch_table as tables


@pytest.fixture
def rows_and_points():
    points = [make_point(b, s, v + 0.2 * s, f + 5 * s, accuracy=0.5 + 0.1 * s)
              for s in range(2) for b, v, f in ((64, 4.0, 40.0), (512, 6.0, 20.0))]
    return tables.summarise(points, 64), points


def test_ratio_cell_shows_change_interval_and_df():
    ci = dict(ratio=1.492, low=1.291, high=1.723, df=3.12)
    row = dict(batch=512, is_change_vs_baseline=49.2, is_ratio_ci=ci)
    assert tables._ratio(row, "is", 64) == "+49.2% [+29.1, +72.3] df 3.1"
    assert tables._ratio(dict(row, batch=64), "is", 64) == "baseline"
    no_interval = dict(row, is_ratio_ci=dict(ci, low=float("nan"), high=float("nan"), df=None))
    assert tables._ratio(no_interval, "is", 64) == "+49.2%"
    assert tables._ratio(dict(batch=512, is_change_vs_baseline=None), "is", 64) == "-"


def test_markdown_table(rows_and_points):
    rows, points = rows_and_points
    md = tables.markdown_table(rows, points, "fashion_mnist", 64)
    lines = md.splitlines()
    assert lines[0].count("|") == len(tables.columns(64)) + 1
    assert all(line.count("|") == lines[0].count("|") for line in lines[:4])
    row512 = next(line for line in lines if line.startswith("| 512 |"))
    cells = [c.strip() for c in row512.strip("|").split("|")]
    assert cells[:3] == ["512", "2", "6.10 ± 0.14"]
    assert cells[5] == "0.550 ± 0.071"
    assert cells[10].startswith("+48.8% [") and " df " in cells[10]
    assert "95% Welch t-interval on log values" in md and "bootstrap" not in md
    assert "Protocol: fashion_mnist_classifier (abc), 500 generated vs 1000 real" in md
    assert "seeds [0, 1]" in md


def test_csv_and_latex(rows_and_points):
    rows, points = rows_and_points
    parsed = list(csv.DictReader(io.StringIO(tables.csv_table(rows))))
    assert [r["batch"] for r in parsed] == ["64", "512"]
    ci = rows[1]["is_ratio_ci"]
    assert float(parsed[1]["is_ratio_low"]) == pytest.approx(ci["low"])
    assert float(parsed[1]["is_ratio_df"]) == pytest.approx(ci["df"])
    assert "is_ratio_ci" not in parsed[0] and "other_bn_modes" not in parsed[0]
    tex = tables.latex_table(rows, points, 64)
    assert tex.startswith(r"\begin{tabular}{" + "r" * len(tables.columns(64)) + "}")
    assert r"6.10 $\pm$ 0.14" in tex and r"+48.8\%" in tex
    assert tables.csv_table([]) == "\r\n"
