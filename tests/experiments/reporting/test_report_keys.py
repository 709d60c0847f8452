"""Re-rendering the committed report gives the same numbers: every number the docs quoted from
the report at commit 52b9e18 (before the report became sections), and every change and
interval of its batch table, is read from today's analysis.json / summary.json under its new
key (`new_path` maps old keys to new ones); and rendering the committed records again gives
every key and number of the committed analysis.json and summary.json."""
import json
import math
import pathlib
import re

import pytest

from experiments.reporting import report
from experiments.reporting.build_docs import lookup

HERE = pathlib.Path(__file__).resolve().parent
REPORT = HERE.parents[2] / "results" / "fashion_mnist" / "report"
OLD = json.loads((HERE / "headline_numbers_52b9e18.json").read_text())

RENAMES = [  # (old key pattern, new key): the old analysis.json's layout -> the sections'
    (r"^(comparisons|trends|seed_spread|evaluation_noise|plateau|baseline_batch|target_batch)",
     r"verdicts.\1"),
    (r"^time_to_target\.[a-z_]+\.schedule_confound\.ratio_512_64\.",
     "schedule_confound.ratio_target_to_baseline."),
    (r"^time_to_target\.[a-z_]+\.schedule_confound\.", "schedule_confound."),
    (r"^time_to_target\.lr_probe\.", "probes.lr_probe."),
    (r"_change_vs_64$", "_change_vs_baseline"),
]


def new_path(path: str) -> str:
    for old, new in RENAMES:
        path = re.sub(old, new, path)
    return path


def _committed():
    return {"analysis.json": json.loads((REPORT / "analysis.json").read_text()),
            "summary.json": json.loads((REPORT / "summary.json").read_text())}


def test_the_key_map_moves_what_moved():
    assert new_path("time_to_target.constant_lr.schedule_confound.ratio_512_64.decayed.200."
                    "ratio") == "schedule_confound.ratio_target_to_baseline.decayed.200.ratio"
    assert new_path("[batch=512].is_change_vs_64") == "[batch=512].is_change_vs_baseline"
    assert new_path("time_to_target.constant_lr.metrics.is_mean[target=7.0].fit.b_crit") \
        == "time_to_target.constant_lr.metrics.is_mean[target=7.0].fit.b_crit"


@pytest.mark.parametrize("file,path,value", OLD, ids=[f"{f}:{p}" for f, p, _ in OLD])
def test_every_headline_number_is_unchanged_under_its_new_key(file, path, value):
    now = lookup(_committed(), f"{file} {new_path(path)}")
    if isinstance(value, float):  # the bootstrap's last digits differ between BLAS builds
        assert math.isclose(now, value, rel_tol=1e-9), (path, now, value)
    else:
        assert now == value, path


def test_there_are_headline_numbers_of_every_section():
    roots = {new_path(p).split(".")[0].split("[")[0] for _, p, _ in OLD}
    assert {"verdicts", "time_to_target", "schedule_confound", "probes", ""} <= roots


def _leaves(value, path=""):
    """{path: value} of every leaf of a JSON value."""
    if not isinstance(value, (dict, list)):
        return {path: value}
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return {p: v for k, item in items for p, v in _leaves(item, f"{path}/{k}").items()}


@pytest.mark.slow
def test_rendering_the_committed_records_again_gives_the_committed_numbers(tmp_path):
    report.write_report(str(REPORT.parent), out=str(tmp_path))
    for name, committed in _committed().items():
        old, new = _leaves(committed), _leaves(json.loads((tmp_path / name).read_text()))
        assert old.keys() == new.keys(), name
        for path, value in old.items():
            if isinstance(value, float):
                assert math.isclose(new[path], value, rel_tol=1e-9) or value != value == new[
                    path] != new[path], (name, path)
            elif not isinstance(value, str):  # prose (a verdict's text line) may be reworded
                assert new[path] == value, (name, path)
