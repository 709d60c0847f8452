"""Shared fixtures for the model-library tests."""
import pytest

from replication import make_replicator


@pytest.fixture(scope="session")
def strategy4():
    """ONE 4-replica MirroredStrategy (make_replicator("cpu:4")) for the whole session.

    Two MirroredStrategy objects over the same devices in one process allocate the same
    collective group/instance keys; the second one's all-reduce of a different shape then
    fails with "Shape mismatch in the collective instance 100" and aborts collectives for
    the rest of the process. So the tests share one.
    """
    return make_replicator("cpu:4").strategy
