"""Replicators shared by the tests in this directory (tests/conftest.py made 4 logical CPUs).

One replicator per spec per session: traced steps are cached on module-level fixtures, and
each new MirroredStrategy costs a little set-up.
"""
import pytest

import replication


@pytest.fixture(scope="session")
def replicator():
    cache = {}

    def get(spec: str) -> replication.Replicator:
        if spec not in cache:
            cache[spec] = replication.make_replicator(spec)
        return cache[spec]

    return get
