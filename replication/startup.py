"""A replicator from a spec given at run time, TensorFlow started in the order it requires.

TensorFlow fixes its logical devices when its runtime starts, and a multi-worker strategy
must exist before the first op; so a program that reads its spec (the command line) starts
TensorFlow here, after parsing, instead of at import. The import goes through
common.quiet_tf, so a user error after it is still one line.
"""
from __future__ import annotations

from common import quiet_tf
from replication.specs import parse_spec


def start_replicator(spec: str):
    """`make_replicator(spec)`, after splitting the CPU for `cpu:N` and importing TensorFlow
    (its runtime started unless the spec may be one worker of several)."""
    parsed = parse_spec(spec)  # a malformed spec fails here, before TensorFlow
    quiet_tf.import_tensorflow(start_runtime=False)
    from replication import devices
    if parsed.cpu_only:  # before the CPU split; the other kinds probe after their checks
        devices.probe_platforms_without_cuda_line()
    if parsed.kind == "cpu" and parsed.count:
        devices.configure_logical_cpus(parsed.count)
    if not parsed.multi_worker:
        quiet_tf.start_tensorflow_runtime()
    from replication.replicator import make_replicator
    return make_replicator(spec)
