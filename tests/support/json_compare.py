"""One comparison for results written by two runs that should agree (resumed vs uninterrupted,
preempted vs uninterrupted): JSON trees equal to 1e-5 relative, wall times aside."""
import math


def assert_close(a, b, path=""):
    """Equal to 1e-5 (relative), wall times aside."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            if "time" not in k:
                assert_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert isinstance(b, (int, float)) and (
            math.isnan(a) and math.isnan(b) or math.isclose(a, b, rel_tol=1e-5)), (path, a, b)
    else:
        assert a == b, (path, a, b)
