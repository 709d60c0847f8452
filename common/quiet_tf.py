"""Import TensorFlow without the lines its C++ runtime prints to stderr while loading.

TF 2.21 prints oneDNN, CUDA and CPU-feature notices through absl before its logging is set
up, so TF_CPP_MIN_LOG_LEVEL does not silence them; a user error must still be one line.
The command line imports TensorFlow through here, with file descriptor 2 pointed at
/dev/null for the duration of the import only.
"""
from __future__ import annotations

import os
import sys


def import_tensorflow(start_runtime: bool = True):
    """TensorFlow, imported quietly; with `start_runtime` its first op runs too (quietly).
    A multi-worker strategy must be created before that first op, so it passes False."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf
        if start_runtime:
            tf.constant(0)  # the runtime's own start-up notices come with the first op
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return tf
