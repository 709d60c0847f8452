"""Two worker processes on loopback train like one process on the same global batch."""
import os
import sys
import time

import numpy as np
import pytest
import tiny_training

from replication import launch_workers

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
STEPS = 3
HARD_LIMIT_S = 240  # a worker whose peer died would otherwise block forever


@pytest.mark.multiworker
def test_two_loopback_workers_match_one_process(tmp_path, replicator):
    start = time.monotonic()
    worker = [sys.executable, os.path.join(HERE, "multiworker_worker.py"), str(tmp_path),
              str(STEPS)]
    env = {"PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "-1"}
    results = launch_workers(worker, num_workers=2, timeout_s=HARD_LIMIT_S, cwd=REPO, env=env)
    assert all(r.ok for r in results) and time.monotonic() - start < HARD_LIMIT_S
    workers = [np.load(tmp_path / f"worker{i}.npz") for i in range(2)]
    single = tiny_training.train(replicator("cpu:1"), synchronized=True, steps=STEPS)
    for i, ref in enumerate(single["weights"]):
        np.testing.assert_array_equal(workers[0][f"w{i}"], workers[1][f"w{i}"])
        np.testing.assert_allclose(workers[0][f"w{i}"], ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(workers[0]["losses"], single["losses"], rtol=2e-5)
    assert int(workers[0]["iterations"]) == STEPS
