"""What a checkpoint holds and how it is restored: every variable under a stable key, and the
newest checkpoint that loads, falling back to older kept ones.

A written checkpoint can still be damaged later: a truncated copy, a full disk, a bad sector,
a hand-edited 'checkpoint' index file. TensorFlow then raises DataLossError, NotFoundError or
similar on restore. Losing the steps since an older checkpoint is better than losing the run,
so every kept checkpoint is tried, newest first, and if none loads the run starts from scratch;
either case is logged as a warning. Checkpoints are found both through TensorFlow's index file
and on disk (`ckpt-N.index`), so a damaged index file hides nothing.
"""
from __future__ import annotations

import logging
import os
import re

import tensorflow as tf

log = logging.getLogger(__name__)

# What a damaged file raises varies (DataLossError, NotFoundError, IndexError "Read less bytes
# than requested", ValueError, AssertionError for missing objects, ...): any of them.
RESTORE_ERRORS = (Exception,)


def variables_by_name(variables) -> dict:
    """Checkpoint keys for Keras 3 variables, listed explicitly.

    tf.train.Checkpoint does not reach the variables of Keras 3 layers held in lists (it
    saved only the top-level layers' weights), so we hand it every variable: keyed by
    position and path (without the model's own, instance-numbered name), which is stable
    across rebuilds of the same architecture. This covers SN u vectors, BN statistics and
    optimizer slots.
    """
    out = {}
    for i, v in enumerate(variables):
        path = getattr(v, "path", v.name).split("/", 1)[-1]
        out[f"{i:04d}-{path.replace('/', '.')}"] = getattr(v, "value", v)
    return out


def _step_of(prefix: str) -> int:
    match = re.search(r"-(\d+)$", prefix)
    return int(match.group(1)) if match else -1


def kept_checkpoints(directory: str) -> list[str]:
    """Checkpoint prefixes in `directory`, oldest first."""
    listed = []
    try:
        state = tf.train.get_checkpoint_state(directory)
        listed = list(state.all_model_checkpoint_paths) if state else []
    except RESTORE_ERRORS as e:
        log.warning("the checkpoint index in %s is unreadable (%s); looking for "
                    "checkpoint files instead", directory, e)
    on_disk = ([os.path.join(directory, f[:-len(".index")]) for f in os.listdir(directory)
                if f.endswith(".index")] if os.path.isdir(directory) else [])
    prefixes = {os.path.normpath(p): p for p in listed + on_disk}
    return sorted(prefixes.values(), key=_step_of)


def restore_newest(checkpoint: tf.train.Checkpoint, directory: str, variables) -> str | None:
    """Restore the newest checkpoint of `directory` that loads into `checkpoint`; returns its
    prefix, or None (then `variables` keep their initial values, even if a damaged file had
    been half-read into them)."""
    candidates = kept_checkpoints(directory)
    if not candidates:
        return None
    initial = [v.numpy() for v in variables]
    for prefix in reversed(candidates):
        try:
            checkpoint.restore(prefix).assert_existing_objects_matched()
        except RESTORE_ERRORS as e:
            reason = " ".join(str(e).split())[:300]
            log.warning("checkpoint %s does not restore (%s: %s); trying an older "
                        "one", prefix, type(e).__name__, reason)
            continue
        if prefix != candidates[-1]:
            log.warning("resumed from the older checkpoint %s; the steps after it "
                        "are trained again", prefix)
        return prefix
    for v, value in zip(variables, initial):
        v.assign(value)
    log.warning("none of the %d checkpoints in %s restores; training starts from "
                "scratch", len(candidates), directory)
    return None
