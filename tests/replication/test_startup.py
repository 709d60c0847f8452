"""start_replicator: a spec read at run time gets the devices it names, because the CPU is
split before TensorFlow's runtime starts; a malformed spec fails before TensorFlow loads."""
import os
import subprocess
import sys

import pytest

from replication import SpecError
from replication.startup import start_replicator

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fresh_python(code: str) -> str:
    """stdout of `code` in a new interpreter, where TensorFlow has not started."""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_a_malformed_spec_fails_before_tensorflow_is_imported():
    out = fresh_python(
        "import sys\n"
        "from replication import SpecError\n"
        "from replication.startup import start_replicator\n"
        "try:\n"
        "    start_replicator('cpu:0')\n"
        "except SpecError:\n"
        "    print('tensorflow' in sys.modules)\n")
    assert out == "False"


def test_cpu_n_in_a_fresh_process_splits_the_cpu_into_n_replicas():
    out = fresh_python(
        "from replication.startup import start_replicator\n"
        "r = start_replicator('cpu:3')\n"
        "print(r.num_replicas, r.device_kind)\n")
    assert out == "3 CPU"  # the unsplit CPU would give 1


@pytest.mark.parametrize("spec, replicas", [("default", 1), ("cpu:2", 2), ("cpu", 4)])
def test_in_a_running_session_it_builds_from_the_devices_already_split(spec, replicas):
    assert start_replicator(spec).num_replicas == replicas  # tests/conftest.py made 4 CPUs


def test_a_malformed_spec_names_the_accepted_forms():
    with pytest.raises(SpecError, match="cpu:N"):
        start_replicator("cpus")


@pytest.mark.parametrize("spec", ["default", "cpu:2"])
def test_a_cpu_replicator_does_not_show_the_cuda_probe(spec):
    """TensorFlow's E-level `failed call to cuInit` (no GPU driver) means nothing when no GPU
    was asked for; on this CPU-only machine TensorFlow prints it at its first device listing."""
    proc = subprocess.run(
        [sys.executable, "-c", "from replication.startup import start_replicator\n"
         f"r = start_replicator({spec!r})\nprint(r.num_replicas)\n"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "cuInit" not in proc.stderr and "E0000" not in proc.stderr, proc.stderr[-2000:]

