"""requirements/lock.txt: what scripts/setup.sh installs, and whether this environment has it.

The installed versions are compared with the lock in every environment scripts/setup.sh made
from it; only an environment it made with SNGAN_UNPINNED=1 (the marker `.sngan-unpinned` in
it) skips the comparison, and the skip names what differs. No TensorFlow import.
"""
from __future__ import annotations

import configparser
import dataclasses
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
UNPINNED_MARKER = pathlib.Path(sys.prefix) / ".sngan-unpinned"
# What every committed number was made with (README, docs/running.md).
STACK_OF_THE_COMMITTED_NUMBERS = {"tensorflow": "2.21.0", "keras": "3.15.1"}


@dataclasses.dataclass(frozen=True)
class Pin:
    name: str
    version: str
    marker: str | None
    hashes: tuple[str, ...]

    def applies(self) -> bool:
        """Does this line install on the running interpreter and platform?"""
        return self.marker is None or Marker(self.marker).evaluate()


def read_lock(text: str) -> list[Pin]:
    """The `name==version [; marker]` entries of a pip requirements file with --hash lines."""
    pins = []
    for entry in re.split(r"\n(?=\S)", text):
        head = entry.split("\\", 1)[0].strip()
        if not head or head.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+?)\s*(?:;\s*(.+))?", head)
        if match is None:
            raise ValueError(f"not an exact pin: {head!r}")
        name, version, marker = match.groups()
        pins.append(Pin(canonicalize_name(name), version, marker,
                        tuple(re.findall(r"--hash=sha256:([0-9a-f]{64})", entry))))
    return pins


def mismatches(pins: list[Pin], installed) -> list[str]:
    """One line per locked package (applying here) whose installed version differs or is absent;
    `installed(name)` gives a version or None."""
    out = []
    for pin in pins:
        if not pin.applies():
            continue
        have = installed(pin.name)
        if have != pin.version:
            out.append(f"{pin.name} {have or 'not installed'} (lock {pin.version})")
    return out


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def declared_requirements(setup_cfg: str) -> list[Requirement]:
    """setup.cfg's install_requires and its `test` extra: the default install."""
    cfg = configparser.ConfigParser()
    cfg.read_string(setup_cfg)
    lines = cfg["options"]["install_requires"].splitlines() \
        + cfg["options.extras_require"]["test"].splitlines()
    return [Requirement(line) for line in (ln.strip() for ln in lines)
            if line and not line.startswith("#")]


def unlocked(requirements: list[Requirement], pins: list[Pin]) -> list[str]:
    """One line per requirement the lock lacks or pins outside its range."""
    locked = {pin.name: pin.version for pin in pins if pin.applies()}
    problems = []
    for req in requirements:
        name = canonicalize_name(req.name)
        if name not in locked:
            problems.append(f"{name} not in the lock")
        elif not req.specifier.contains(locked[name], prereleases=True):
            problems.append(f"{name} {locked[name]} outside {req.specifier}")
    return problems


PINS = read_lock(LOCK.read_text())


def test_this_environment_has_exactly_the_locked_versions():
    found = mismatches(PINS, installed_version)
    if UNPINNED_MARKER.exists():
        pytest.skip("unpinned install (SNGAN_UNPINNED=1): "
                    + ("; ".join(found) if found else "every version equals the lock"))
    assert not found, (f"{len(found)} installed versions differ from requirements/lock.txt "
                       f"(reinstall: rm {sys.prefix}/.sngan-installed; bash scripts/setup.sh): "
                       + "; ".join(found))


def test_the_lock_pins_the_stack_every_committed_number_was_made_with():
    locked = {pin.name: pin.version for pin in PINS if pin.applies()}
    assert {name: locked.get(name) for name in STACK_OF_THE_COMMITTED_NUMBERS} \
        == STACK_OF_THE_COMMITTED_NUMBERS


def test_every_declared_requirement_is_locked_within_its_range():
    """A setup.cfg change without `scripts/lock.sh` fails here, before any install."""
    assert unlocked(declared_requirements((ROOT / "setup.cfg").read_text()), PINS) == []


def test_every_locked_package_has_hashes_and_one_version_here():
    assert len(PINS) > 100  # the TensorFlow stack and the test tools: 112 on Linux today
    assert [pin.name for pin in PINS if not pin.hashes] == []
    applying = [pin.name for pin in PINS if pin.applies()]
    assert len(applying) == len(set(applying))


# ---- the checker itself, on made-up locks --------------------------------------------------

FAKE_LOCK = """\
# a comment
alpha==1.0 \\
    --hash=sha256:{h}
    # via beta
Beta_Pkg==2.0.1 ; python_version >= '3.0' \\
    --hash=sha256:{h} \\
    --hash=sha256:{h}
gamma==3 ; sys_platform == 'no-such-platform' \\
    --hash=sha256:{h}
""".format(h="a" * 64)


def test_read_lock_takes_names_versions_markers_and_hashes():
    pins = read_lock(FAKE_LOCK)
    assert [(p.name, p.version, p.marker, len(p.hashes)) for p in pins] == [
        ("alpha", "1.0", None, 1), ("beta-pkg", "2.0.1", "python_version >= '3.0'", 2),
        ("gamma", "3", "sys_platform == 'no-such-platform'", 1)]


def test_a_loose_requirement_is_not_a_lock():
    with pytest.raises(ValueError, match="not an exact pin"):
        read_lock("alpha>=1.0 \\\n    --hash=sha256:" + "a" * 64 + "\n")


def test_mismatches_name_each_wrong_or_missing_package_and_skip_other_platforms():
    pins = read_lock(FAKE_LOCK)
    assert mismatches(pins, {"alpha": "1.0", "beta-pkg": "2.0.1"}.get) == []
    assert mismatches(pins, {"alpha": "1.1"}.get) == [
        "alpha 1.1 (lock 1.0)", "beta-pkg not installed (lock 2.0.1)"]


def test_a_range_the_lock_breaks_or_a_package_it_lacks_is_named():
    cfg = (ROOT / "setup.cfg").read_text().replace("tensorflow>=2.16,<2.22", "tensorflow>=2.22") \
        .replace("    numpy\n", "    numpy\n    no-such-package\n")
    assert unlocked(declared_requirements(cfg), PINS) == [
        "tensorflow 2.21.0 outside >=2.22", "no-such-package not in the lock"]


# ---- scripts/setup.sh is run, never sourced ------------------------------------------------

def test_sourcing_setup_sh_changes_no_shell_option_and_does_nothing(tmp_path):
    script = ROOT / "scripts" / "setup.sh"
    shell = (f'set +e +u; before=$-; SNGAN_VENV={tmp_path}/venv; . "{script}"; rc=$?; '
             'echo "$before $- $rc"')
    result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=30)
    before, after, rc = result.stdout.split()
    assert (after, rc) == (before, "1")
    assert "do not source it" in result.stderr
    assert not (tmp_path / "venv").exists()


def _run_setup(tmp_path, **env):
    return subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh")], capture_output=True,
                          text=True, timeout=30,
                          env={**os.environ, "SNGAN_VENV": str(tmp_path / "venv"), **env})


def test_setup_refuses_the_lock_on_python_3_10_and_installs_nothing(tmp_path):
    fake = tmp_path / "venv" / "bin" / "python"  # answers like Python 3.10 would
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\n[ "$1" = -V ] && echo "Python 3.10.13"\nexit 1\n')
    fake.chmod(0o755)
    result = _run_setup(tmp_path, SNGAN_UNPINNED="0")
    assert result.returncode == 1
    assert "needs Python >= 3.11" in result.stderr and "Python 3.10.13" in result.stderr
    assert sorted(p.name for p in (tmp_path / "venv").iterdir()) == ["bin"]


def test_setup_rejects_an_unknown_unpinned_value(tmp_path):
    result = _run_setup(tmp_path, SNGAN_UNPINNED="yes")
    assert result.returncode == 1 and "SNGAN_UNPINNED must be 0 or 1" in result.stderr
    assert not (tmp_path / "venv").exists()
