"""CITATION.cff parses and names the suite and the four works it builds on."""
import pathlib

import yaml

CFF = pathlib.Path(__file__).resolve().parents[1] / "CITATION.cff"


def test_citation_file_is_valid_and_complete():
    cff = yaml.safe_load(CFF.read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert {"title", "authors", "license", "version", "message"} <= set(cff)
    refs = {r["title"]: r for r in cff["references"]}
    assert {"TF-Replicator: Distributed Machine Learning for Researchers",
            "Spectral Normalization for Generative Adversarial Networks",
            "cGANs with Projection Discriminator"} <= set(refs)
    assert any(t.startswith("TF-GAN") for t in refs)
    ids = {i["value"] for r in cff["references"] for i in r.get("identifiers", [])}
    assert ids == {"arXiv:1902.00465", "arXiv:1802.05957", "arXiv:1802.05637"}
