"""Test session set-up: 4 logical CPU devices, created before TensorFlow's runtime starts.

Logical devices can be configured once per process, so the largest count any test needs is
set here and `cpu:1`/`cpu:2`/`cpu:4` replicators are built from subsets of it.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from replication import devices  # noqa: E402

devices.configure_logical_cpus(4)

_exit_status = {"code": 0}
_file_seconds: dict[str, float] = {}


def pytest_addoption(parser):
    parser.addoption("--file-durations", type=int, default=0, metavar="N",
                     help="list the N test files that took longest (set-up, call and "
                          "tear-down summed; a shared fixture counts where it was built)")


def pytest_collection_modifyitems(config, items):
    """The tiers are disjoint: `scripts/test.sh --slow` (in CI) selects `slow`, so a test
    marked long as well would run in CI after all."""
    both = [item.nodeid for item in items
            if item.get_closest_marker("slow") and item.get_closest_marker("long")]
    if both:
        raise ValueError(f"marked both slow and long: {', '.join(both)}")


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    _file_seconds[path] = _file_seconds.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, config):
    n = config.getoption("--file-durations")
    if not n or not _file_seconds:
        return
    total = sum(_file_seconds.values())
    terminalreporter.write_sep("=", f"slowest {n} test files")
    for path, seconds in sorted(_file_seconds.items(), key=lambda kv: -kv[1])[:n]:
        terminalreporter.write_line(f"{seconds:8.1f} s {100 * seconds / total:5.1f}%  {path}")
    terminalreporter.write_line(f"{total:8.1f} s in {len(_file_seconds)} files")


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
