"""The exported SavedModel runs without this package and reproduces the in-process generator."""
import json
import os
import subprocess
import sys
import sysconfig

import numpy as np
import pytest
from tiny_configs import tiny_model

import replication
from sngan import models
from sngan.export import export_generator
from sngan.sampling import Sampler

LOADER = """
import json, sys
sys.path.append(sys.argv[1])  # site-packages only: no .pth files, so no editable install
try:
    import sngan  # noqa: F401
    raise SystemExit("the suite is importable here")
except ImportError:
    pass
import numpy as np, tensorflow as tf
model = tf.saved_model.load(sys.argv[2])
fn = model.signatures["serving_default"]
z = np.load(sys.argv[3])
out = fn(z=tf.constant(z), labels=tf.constant(np.arange(len(z)) % 10, tf.int32))["images"]
np.save(sys.argv[4], out.numpy())
print(json.dumps({k: [v.shape.as_list(), v.dtype.name]
                  for k, v in fn.structured_input_signature[1].items()}))
"""


@pytest.fixture(scope="module")
def sampler():
    cfg = tiny_model()
    g = models.build_generator(cfg)
    # make the moving statistics differ from the batch statistics, as after training
    for bn in g.bn_layers:
        bn.moving_mean.assign(np.full(bn.moving_mean.shape, 0.3, np.float32))
        bn.moving_variance.assign(np.full(bn.moving_variance.shape, 2.0, np.float32))
    return Sampler(g, replication.make_replicator("default"), cfg.z_dim, cfg.num_classes)


@pytest.mark.parametrize("bn_mode", ["moving", "standing"])
def test_export_loads_without_the_package_and_matches(sampler, bn_mode, tmp_path):
    z = np.random.default_rng(0).normal(size=(12, 16)).astype(np.float32)
    labels = np.arange(12) % 10
    before = [m.copy() for m, _ in sampler.bn_state()]
    export_generator(sampler, str(tmp_path / "model"), bn_mode=bn_mode, standing_batches=3,
                     batch_size=64)
    for b, (m, _) in zip(before, sampler.bn_state()):
        np.testing.assert_array_equal(b, m)  # exporting never changes the model
    if bn_mode == "standing":
        saved = sampler.bn_state()
        sampler.set_bn_state(sampler.standing_statistics(0, 3, 64))
        expected = sampler.generator(z, labels, training=False).numpy()
        sampler.set_bn_state(saved)
    else:
        expected = sampler.generator(z, labels, training=False).numpy()
    np.save(tmp_path / "z.npy", z)
    proc = subprocess.run(
        [sys.executable, "-S", "-c", LOADER, sysconfig.get_paths()["purelib"],
         str(tmp_path / "model"), str(tmp_path / "z.npy"), str(tmp_path / "out.npy")],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    spec = json.loads(proc.stdout.strip().splitlines()[-1])
    assert spec == {"z": [[None, 16], "float32"], "labels": [[None], "int32"]}
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, atol=1e-5)
    assert np.abs(expected).max() <= 1.0
