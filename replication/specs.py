"""Replicator specs ('default', 'cpu:4', 'gpu', 'slurm', 'auto', ...) parsed once, without
TensorFlow.

Configs validate batch divisibility and the CLI configures logical CPUs before TensorFlow starts,
so the parse must not import it; `make_replicator` builds from the same `ReplicatorSpec`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from common.errors import UserError

SPEC_FORMS = ("default", "cpu", "cpu:N", "gpu", "gpu:N", "multiworker", "slurm",
              "slurm:port=P,gpus=G", "auto", "tpu", "tpu:ADDRESS")
SLURM_OPTIONS = ("port", "gpus")  # slurm:port=P (first port of a node), gpus=G (per task)
# kinds whose process may be one of several workers, known only once the cluster is resolved
MULTI_WORKER_KINDS = ("multiworker", "slurm", "auto")


class SpecError(UserError, ValueError):
    """A replicator spec is malformed (the message lists the accepted forms)."""

    def __init__(self, spec, why: str):
        super().__init__(f"replicator spec {spec!r}: {why}; expected one of {SPEC_FORMS}")


class DeviceUnavailableError(UserError, RuntimeError):
    """A well-formed spec asks for hardware or cluster configuration this process lacks."""


@dataclass(frozen=True)
class ReplicatorSpec:
    text: str
    kind: str  # default | cpu | gpu | multiworker | slurm | auto | tpu
    count: int | None = None  # cpu:N / gpu:N
    address: str | None = None  # tpu:ADDRESS
    port: int | None = None  # slurm:port=P
    gpus: int | None = None  # slurm:gpus=G

    @property
    def replicas(self) -> int | None:
        """Replicas the spec promises, or None when only known at run time."""
        return 1 if self.kind == "default" else self.count

    @property
    def multi_worker(self) -> bool:
        """Whether this process may be one of several workers (its index is known only once
        the replicator is built): such a process must not start TensorFlow's runtime first."""
        return self.kind in MULTI_WORKER_KINDS

    @property
    def cpu_only(self) -> bool:
        """Whether the spec rules out a GPU (default, cpu, cpu:N); the others may use one."""
        return self.kind in ("default", "cpu")


def parse_spec(spec) -> ReplicatorSpec:
    if not isinstance(spec, str):
        raise SpecError(spec, "not a string")
    text = spec.strip()
    kind, sep, arg = text.partition(":")
    if kind in ("default", "multiworker", "auto"):
        if sep:
            raise SpecError(spec, f"'{kind}' takes no argument")
        return ReplicatorSpec(text, kind)
    if kind in ("cpu", "gpu"):
        if sep and not re.fullmatch(r"[1-9]\d*", arg):
            raise SpecError(spec, f"the device count after '{kind}:' must be a positive integer")
        return ReplicatorSpec(text, kind, count=int(arg) if sep else None)
    if kind == "slurm":
        return ReplicatorSpec(text, kind, **_slurm_options(spec, arg if sep else None))
    if kind == "tpu":
        if sep and not arg:
            raise SpecError(spec, "an address must follow 'tpu:'")
        return ReplicatorSpec(text, kind, address=arg if sep else None)
    raise SpecError(spec, "unknown form")


def _slurm_options(spec: str, arg: str | None) -> dict:
    """'port=12345,gpus=1' -> {'port': 12345, 'gpus': 1}."""
    if arg is None:
        return {}
    options = {}
    for item in arg.split(","):
        key, eq, value = item.partition("=")
        if key not in SLURM_OPTIONS or not eq:
            raise SpecError(spec, f"'slurm:' takes {'/'.join(SLURM_OPTIONS)}=N options, got "
                                  f"{item!r}")
        if key in options:
            raise SpecError(spec, f"'{key}' is given twice")
        if not re.fullmatch(r"\d+", value):
            raise SpecError(spec, f"'{key}' must be a non-negative integer, got {value!r}")
        options[key] = int(value)
    if "port" in options and not 0 < options["port"] < 65536:
        raise SpecError(spec, f"port {options['port']} is not in 1..65535")
    return options
