"""The training step runs with grappler's remapper pass turned off.

On D's graph TensorFlow 2.21's remapper (its oneDNN fusions) fails: a fusion absorbs the
residual add of D's first block (`block1/add`) and deletes that node, although the add has a
second consumer, the next block's shortcut pooling (`block2/AvgPool2D`), so grappler rejects
the rewrite (`remapper failed: INVALID_ARGUMENT: Mutation::Apply error: fanout
'.../block2/AvgPool2D' exist for missing node '.../block1/add'`, an E-level line per graph).
Grappler keeps the graph from before a failed pass, so the step already ran unremapped: turning
the pass off for the step's calls drops the line and changes no result (the same weights after
three steps, tests/sngan/test_grappler.py). Graphs traced outside these calls (sampling, the
classifier) keep the pass. Grappler reads its options when a function is first called, so the
switch wraps every call, not only the first trace.
"""
from __future__ import annotations

import contextlib
import functools

import tensorflow as tf


@contextlib.contextmanager
def remapper_off():
    before = tf.config.optimizer.get_experimental_options().get("remapping", True)
    tf.config.optimizer.set_experimental_options({"remapping": False})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"remapping": before})


def without_remapper(fn):
    """`fn` called with the remapper off (see the module docstring)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with remapper_off():
            return fn(*args, **kwargs)
    return call
