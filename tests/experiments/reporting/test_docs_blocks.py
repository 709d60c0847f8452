"""The README's and docs/study.md's results blocks are what the committed report renders to:
a stale block fails `build_docs --check`, and a key names exactly one value."""
import json
import shutil

import pytest

from experiments.reporting import build_docs

REPORT = build_docs.load()


@pytest.mark.parametrize("path", build_docs.DOCS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_committed_blocks_regenerate_byte_identical(path):
    with open(path) as f:
        text = f.read()
    assert "<!-- results: " in text and "<!-- analysis.json" not in text
    assert build_docs.rebuild(text, REPORT) == text


def test_a_stale_block_in_a_copy_of_the_docs_fails_the_check(monkeypatch, tmp_path):
    copies = [tmp_path / "README.md", tmp_path / "study.md"]
    for doc, copy in zip(build_docs.DOCS, copies):
        shutil.copy(doc, copy)
    monkeypatch.setattr(build_docs, "DOCS", [str(c) for c in copies])
    build_docs.main(["--check"])  # the copies are current
    readme = copies[0].read_text()
    stale = readme.replace("| 1.53x | [1.26x, 1.88x] |", "| 1.50x | [1.26x, 1.88x] |")
    assert stale != readme
    copies[0].write_text(stale)
    with pytest.raises(SystemExit, match="README.md out of date"):
        build_docs.main(["--check"])
    assert copies[0].read_text() == stale  # --check writes nothing
    build_docs.main([])
    assert copies[0].read_text() == readme  # the prose around the block is kept


def test_a_new_report_makes_the_committed_blocks_stale():
    report = json.loads(json.dumps(REPORT))
    report["summary.json"][-1]["is_ratio_ci"]["ratio"] = 1.6
    with open(build_docs.DOCS[0]) as f:
        readme = f.read()
    new = build_docs.rebuild(readme, report)
    assert "| IS change, 64 -> 512 (6 seeds a side) | +60.0% |" in new and new != readme


def test_a_block_nothing_renders_is_refused():
    with pytest.raises(SystemExit, match="'nope' is not one of"):
        build_docs.rebuild("<!-- results: nope -->\n<!-- /results: nope -->", REPORT)


def test_a_key_selects_by_fields_index_or_range_and_refuses_ambiguity():
    data = {"analysis.json": {"lines": [{"first": 8, "last": 512, "slope": 0.5},
                                        {"first": 8, "last": 64, "slope": 0.3}]}}
    assert build_docs.lookup(data, "analysis.json lines[first=8,last=64].slope") == 0.3
    assert build_docs.lookup(data, "analysis.json lines[1].slope") == 0.3
    assert build_docs.lookup(data, "analysis.json lines[last>=64].slope") == [0.5, 0.3]
    with pytest.raises(KeyError, match="2 entries have"):
        build_docs.lookup(data, "analysis.json lines[first=8].slope")


def test_key_numbers_are_printed_as_quoted():
    show = build_docs.show
    assert show(1.4923, "{:+.1f}%", "change") == "+49.2%" and show(0.0480, "{:.1f}%", "%") == "4.8%"
    assert (show(0.0021645, "p"), show(1.9502e-05, "p")) == ("0.0022", "2.0e-05")
    assert show([41.3, 32.65, 37.5], "{:.0f}") == "33 to 41" and show("opposite") == "opposite"
    table = build_docs.key_table(REPORT, [build_docs.Key(
        "B_crit", "analysis.json time_to_target.constant_lr.metrics.is_mean[target=7.0].fit.b_crit",
        "{:.0f}", "analysis.json time_to_target.constant_lr.metrics.is_mean[target=7.0]"
        ".fit.b_crit_ci")])
    assert table.splitlines()[-1] == ("| B_crit | 35 | [29, 45] | `time_to_target.constant_lr."
                                      "metrics.is_mean[target=7.0].fit.b_crit` |")
