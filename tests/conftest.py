"""Test session set-up: 4 logical CPU devices, created before TensorFlow's runtime starts.

Logical devices can be configured once per process, so the largest count any test needs is
set here and `cpu:1`/`cpu:2`/`cpu:4` replicators are built from subsets of it.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from replication import devices  # noqa: E402

devices.configure_logical_cpus(4)

_exit_status = {"code": 0}


def pytest_sessionfinish(session, exitstatus):
    _exit_status["code"] = int(exitstatus)


def pytest_unconfigure(config):
    """Leave without interpreter teardown: TensorFlow can block forever there, destroying a
    tf.data iterator whose prefetch thread never finishes (seen on TF 2.21 after the
    multi-replica tests). Every result has been reported by now."""
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_exit_status["code"])
