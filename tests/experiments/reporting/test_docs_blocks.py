"""The README's and docs/study.md's results blocks are what the committed report renders to,
and a stale block, or one nothing renders, is caught."""
import pytest

from experiments.reporting import build_docs


@pytest.mark.parametrize("path", build_docs.DOCS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_committed_blocks_regenerate_byte_identical(path):
    with open(path) as f:
        text = f.read()
    assert "<!-- results: " in text
    assert build_docs.rebuild(text, *build_docs.load()) == text


def test_a_stale_block_is_rewritten_and_the_prose_kept():
    rows, analysis = build_docs.load()
    doc = ("Prose 1.53x stays.\n<!-- results: headline -->\nold 1.40x\n"
           "<!-- /results: headline -->\nend\n")
    new = build_docs.rebuild(doc, rows, analysis)
    assert new.startswith("Prose 1.53x stays.\n<!-- results: headline -->\n**8x the batch "
                          "(64 -> 512): steps saved to IS 7.0 1.53x [1.26, 1.88]")
    assert new.endswith("<!-- /results: headline -->\nend\n") and "old" not in new
    assert build_docs.rebuild(new, rows, analysis) == new
    rows[-1]["is_mean"] = 9.99  # a new run: the committed table goes stale
    with open(build_docs.DOCS[0]) as f:
        readme = f.read()
    assert build_docs.rebuild(readme, rows, analysis) != readme


def test_a_block_nothing_renders_is_refused():
    with pytest.raises(SystemExit, match="'nope' is not one of"):
        build_docs.rebuild("<!-- results: nope -->\n<!-- /results: nope -->", *build_docs.load())


def test_check_exits_when_stale(monkeypatch, tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- results: headline -->\nstale\n<!-- /results: headline -->\n")
    monkeypatch.setattr(build_docs, "DOCS", [str(doc)])
    with pytest.raises(SystemExit, match="out of date"):
        build_docs.main(["--check"])
    assert "stale" in doc.read_text()
    build_docs.main([])
    build_docs.main(["--check"])
