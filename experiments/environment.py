"""What made a record: the suite's commit, the software stack, the CPU and the devices.

The same config gives different numbers on another CPU or TensorFlow release (bfloat16 ran
1.38x faster than float32 on one 2-core CPU and 1.63x on another; a rerun differs by rounding
amplified over training), so every point keeps the environment each of its runs started in
(POINT/environment.json, then the finished record). A run that resumes a checkpoint under
another stack, CPU or commit is refused in one line unless the user allows it
(train.environment_change_ok), and then both environments are kept.

The devices and the replicator are recorded but never refused: resuming on other replicas is
a supported change (run_dir.RESUMABLE_FIELDS; the equivalence tests check it). Nothing here
imports TensorFlow: versions come from the installed packages' metadata.
"""
from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess

from common.errors import UserError
from experiments import records
from experiments.records import Environment

# the packages whose versions a record names (the ones the suite's workarounds depend on)
PACKAGES = ("tensorflow", "keras", "numpy", "scipy", "tensorflow-gan")
# CPU flags that change what a step computes or how fast: oneDNN's float32 kernels (AVX2,
# FMA, AVX-512) and native bfloat16 (AVX512_BF16, AMX)
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
# what a resume may not change without train.environment_change_ok
CHECKED = ("suite_commit", "suite_dirty", "python", "packages", "cpu_model", "cpu_flags")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class EnvironmentChangedError(UserError, RuntimeError):
    """A checkpoint would be resumed under another environment than the one that made it."""


def package_versions(names=PACKAGES) -> dict[str, str | None]:
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str | None, list[str]]:
    model, flags = None, []
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("model name") and model is None:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    have = set(line.split(":", 1)[1].split())
                    flags = [x for x in CPU_FLAGS if x in have]
    except OSError:
        pass
    return model or platform.processor() or None, flags


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def suite_commit() -> tuple[str | None, bool | None]:
    """(HEAD, whether tracked code differs from it); (None, None) outside a git checkout.

    results/ is left out of the dirty check: a running study writes there."""
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results")
    return commit, (None if status is None else bool(status))


def current(devices: list[str] | None = None, replicator: str | None = None,
            step: int = 0) -> Environment:
    """The environment this process runs in (devices from the replicator, when known)."""
    commit, dirty = suite_commit()
    model, flags = _cpuinfo()
    return Environment(
        source="measured", started_at_step=int(step),
        recorded_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        suite_commit=commit, suite_dirty=dirty, python=platform.python_version(),
        packages=package_versions(), cpu_model=model, cpu_flags=flags,
        devices=list(devices or []), replicator=replicator)


def differences(saved: Environment, now: Environment) -> list[str]:
    """'field: old -> new' for every checked field that changed (packages one by one)."""
    out = []
    for name in CHECKED:
        a, b = getattr(saved, name), getattr(now, name)
        if name == "packages":
            out += [f"{k} {a.get(k)} -> {b.get(k)}" for k in sorted(set(a) | set(b))
                    if a.get(k) != b.get(k)]
        elif a != b:
            if name == "suite_commit":
                a, b = (a or "none")[:10], (b or "none")[:10]
            out.append(f"{name.replace('_', ' ')} {a} -> {b}")
    return out


def start(run_dir: str, now: Environment, resuming: bool, allow_change: bool) -> list:
    """Record `now` as the environment of the run starting in `run_dir`; returns the point's
    environments. A resume under a changed environment is refused unless `allow_change`;
    an unchanged one adds nothing."""
    saved = records.read_environments(run_dir)
    if resuming and saved:
        changed = differences(saved[-1], now)
        if not changed:
            return saved
        if not allow_change:
            raise EnvironmentChangedError(
                f"{run_dir}: its checkpoint was made under another environment "
                f"({'; '.join(changed)}); resume it there, or pass --set "
                "train.environment_change_ok=true to resume here and keep both")
    elif not resuming:
        saved = []  # a fresh start: an earlier run's environment no longer describes it
    envs = [*saved, now]
    records.write_environments(run_dir, envs)
    return envs


def describe(env: Environment) -> str:
    """One short line: 'TF 2.21.0, Keras 3.15.1 on AMD EPYC [avx2, fma]'."""
    p = env.packages
    flags = f" [{', '.join(env.cpu_flags)}]" if env.cpu_flags else ""
    cpu = env.cpu_model or "an unrecorded CPU"
    tf, keras = p.get("tensorflow") or "unrecorded", p.get("keras") or "unrecorded"
    return f"TF {tf}, Keras {keras} on {cpu}{flags}"
