"""Import TensorFlow without the lines its C++ runtime prints to stderr while loading.

TF 2.21 prints oneDNN, CUDA and CPU-feature notices through absl before its logging is set
up, so TF_CPP_MIN_LOG_LEVEL does not silence them; a user error must still be one line.
The command line imports TensorFlow through here, with file descriptor 2 pointed at
/dev/null for the duration of the import only.
"""
from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def stderr_to(fd: int):
    """File descriptor 2 (where TensorFlow's C++ code writes) pointed at `fd` meanwhile."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@contextlib.contextmanager
def _stderr_to_devnull():
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with stderr_to(devnull):
            yield
    finally:
        os.close(devnull)


def import_tensorflow(start_runtime: bool = True):
    """TensorFlow, imported quietly; with `start_runtime` its first op runs too (quietly).
    A multi-worker strategy must be created before that first op, so it passes False."""
    if "tensorflow" in sys.modules:
        tf = sys.modules["tensorflow"]
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        with _stderr_to_devnull():
            import tensorflow as tf
    if start_runtime:
        start_tensorflow_runtime()
    return tf


def start_tensorflow_runtime() -> None:
    """The runtime's first op; its own start-up notices come with it, silenced likewise."""
    with _stderr_to_devnull():
        sys.modules["tensorflow"].constant(0)
