"""Replicator specs ('default', 'cpu:4', 'gpu', 'tpu:ADDR', ...) parsed once, without TensorFlow.

Configs validate batch divisibility and the CLI configures logical CPUs before TensorFlow starts,
so the parse must not import it; `make_replicator` builds from the same `ReplicatorSpec`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from common.errors import UserError

SPEC_FORMS = ("default", "cpu", "cpu:N", "gpu", "gpu:N", "multiworker", "tpu", "tpu:ADDRESS")


class SpecError(UserError, ValueError):
    """A replicator spec is malformed (the message lists the accepted forms)."""

    def __init__(self, spec, why: str):
        super().__init__(f"replicator spec {spec!r}: {why}; expected one of {SPEC_FORMS}")


@dataclass(frozen=True)
class ReplicatorSpec:
    text: str
    kind: str  # default | cpu | gpu | multiworker | tpu
    count: int | None = None  # cpu:N / gpu:N
    address: str | None = None  # tpu:ADDRESS

    @property
    def replicas(self) -> int | None:
        """Replicas the spec promises, or None when only known at run time."""
        return 1 if self.kind == "default" else self.count


def parse_spec(spec) -> ReplicatorSpec:
    if not isinstance(spec, str):
        raise SpecError(spec, "not a string")
    text = spec.strip()
    kind, sep, arg = text.partition(":")
    if kind in ("default", "multiworker"):
        if sep:
            raise SpecError(spec, f"'{kind}' takes no argument")
        return ReplicatorSpec(text, kind)
    if kind in ("cpu", "gpu"):
        if sep and not re.fullmatch(r"[1-9]\d*", arg):
            raise SpecError(spec, f"the device count after '{kind}:' must be a positive integer")
        return ReplicatorSpec(text, kind, count=int(arg) if sep else None)
    if kind == "tpu":
        if sep and not arg:
            raise SpecError(spec, "an address must follow 'tpu:'")
        return ReplicatorSpec(text, kind, address=arg if sep else None)
    raise SpecError(spec, "unknown form")
