"""The training step with grappler's remapper off: no E-level line, and the same weights as
with the pass on (where it fails on D's graph and grappler keeps the graph from before it)."""
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from sngan import grappler
from sngan.precision import cpu_flags

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREE_STEPS = """
import hashlib, sys, tempfile
sys.path[:0] = [{root!r}, {support!r}]
import numpy as np
from tiny_configs import tiny_model, tiny_train
from synthetic_data import synthetic_input_fn
import replication
from sngan.training import GANTrainer
trainer = GANTrainer(tiny_model(g_ch=16, d_ch=16), tiny_train(),
                     replication.make_replicator("default"), synthetic_input_fn(8),
                     tempfile.mkdtemp() + "/run")
step = trainer._train_step if {wrapped} else trainer._train_step.__wrapped__
for _ in range(3):
    step(trainer.iterator)
digest = hashlib.sha256()
for v in sorted(trainer.generator.weights + trainer.discriminator.weights, key=lambda v: v.path):
    digest.update(np.ascontiguousarray(v.numpy()).tobytes())
print("weights", digest.hexdigest())
"""


def _three_steps(wrapped: bool):
    code = THREE_STEPS.format(root=ROOT, support=os.path.join(ROOT, "tests", "support"),
                              wrapped=wrapped)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    weights = [line for line in proc.stdout.splitlines() if line.startswith("weights ")]
    return weights[0], proc.stderr


@pytest.mark.long
def test_the_step_without_the_remapper_is_quiet_and_unchanged():
    plain_weights, plain_log = _three_steps(wrapped=False)
    quiet_weights, quiet_log = _three_steps(wrapped=True)
    # the failure this module works around, still there: it was seen on AVX-512 CPUs; on the
    # AVX2-only 2-core AMD EPYC of 2026-12-07 the pass logged no failure with it on either
    flags = cpu_flags() or set()
    assert "remapper failed" in plain_log or "avx512f" not in flags
    assert "remapper failed" not in quiet_log
    assert quiet_weights == plain_weights


def test_the_switch_is_restored_after_each_call():
    seen = []
    step = grappler.without_remapper(
        lambda: seen.append(tf.config.optimizer.get_experimental_options()["remapping"]))
    step()
    assert seen == [False]
    assert tf.config.optimizer.get_experimental_options().get("remapping", True) is True
