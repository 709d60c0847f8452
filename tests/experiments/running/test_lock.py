"""One writer per output directory (flock), and under multiworker one directory per worker."""
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from experiments.running import lock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TRY_LOCK = ("import sys; from experiments.running import lock; "
            "lock.lock_dir(sys.argv[1], 'second'); print('locked')")


def try_lock_elsewhere(directory):
    return subprocess.run([sys.executable, "-c", TRY_LOCK, str(directory)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_held_lock_names_its_holder_and_dies_with_it(tmp_path):
    lock.lock_dir(str(tmp_path), "python -m experiments sweep --out x")
    try:
        assert lock.lock_dir(str(tmp_path)) == str(tmp_path / ".lock")  # re-entrant
        proc = try_lock_elsewhere(tmp_path)
        assert proc.returncode != 0
        assert f"in use by process {os.getpid()} (python -m experiments sweep --out x)" \
            in proc.stderr
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()
    finally:
        lock.unlock_dir(str(tmp_path))
    assert try_lock_elsewhere(tmp_path).stdout.strip() == "locked"  # released


def test_a_lock_file_left_by_a_dead_process_does_not_block(tmp_path):
    (tmp_path / ".lock").write_text(json.dumps({"pid": 999999, "command": "killed"}))
    assert try_lock_elsewhere(tmp_path).stdout.strip() == "locked"


def test_a_file_is_no_output_directory(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(lock.NotADirectory, match="'.*afile' is a file, not a directory"):
        lock.lock_dir(str(tmp_path / "afile"))
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.parametrize("spec, worker, locked_before, writes", [
    ("default", 0, True, "out"),
    ("multiworker", 0, False, "out"),  # the chief writes the results
    ("multiworker", 2, False, "out/.worker2"),
])
def test_own_output_locks_before_the_replicator_except_under_multiworker(
        tmp_path, spec, worker, locked_before, writes):
    out = str(tmp_path / "out")
    seen = []

    def make_replicator(s):
        seen.append((s, os.path.exists(os.path.join(out, lock.LOCK_FILE))))
        return SimpleNamespace(worker_index=worker)

    try:
        _, directory = lock.own_output(out, "cmd", spec, make_replicator)
        assert seen == [(spec, locked_before)]
        assert directory == str(tmp_path / writes)
        assert json.loads(open(os.path.join(directory, lock.LOCK_FILE)).read())["command"] \
            == "cmd"
    finally:
        lock.unlock_dir(out)
        lock.unlock_dir(os.path.join(out, f".worker{worker}"))
