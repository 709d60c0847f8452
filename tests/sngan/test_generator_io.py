"""Generator weights without the trainer: .npz round trip, checkpoint restore, clear refusals."""
import pathlib

import numpy as np
import pytest
from tiny_configs import tiny_model

from common.errors import WeightsError
from experiments.configs import preset
from sngan import generator_io, models


def _outputs(generator):
    z = np.random.default_rng(1).normal(size=(6, 16)).astype(np.float32)
    return generator(z, np.arange(6) % 10, training=False).numpy()


@pytest.fixture(scope="module")
def trained(tiny_run):
    """The session's tiny run (tests/sngan/conftest.py): EMA generator, checkpoints at 2, 4."""
    return tiny_run, pathlib.Path(tiny_run.workdir)


def test_npz_round_trip_gives_identical_outputs(trained, tmp_path):
    trainer, _ = trained
    path = str(tmp_path / "g.npz")
    digest = generator_io.save_generator_weights(trainer.generator, path)
    assert generator_io.save_generator_weights(trainer.generator, str(tmp_path / "h.npz")) \
        == digest  # reproducible bytes
    fresh = models.build_generator(tiny_model())
    generator_io.load_generator_weights(fresh, path, expected_sha256=digest)
    np.testing.assert_array_equal(_outputs(fresh), _outputs(trainer.generator))
    with np.load(path, allow_pickle=False) as npz:
        assert any("moving_mean" in k for k in npz.files)


def test_refusals(trained, tmp_path):
    trainer, _ = trained
    path = str(tmp_path / "g.npz")
    generator_io.save_generator_weights(trainer.generator, path)
    fresh = models.build_generator(tiny_model())
    with pytest.raises(WeightsError, match="SHA-256"):
        generator_io.load_generator_weights(fresh, path, expected_sha256="0" * 64)
    with pytest.raises(WeightsError, match="not found"):
        generator_io.load_generator_weights(fresh, str(tmp_path / "none.npz"))
    wider = models.build_generator(tiny_model(g_ch=16))
    with pytest.raises(WeightsError, match="shape"):
        generator_io.load_generator_weights(wider, path)
    with pytest.raises(WeightsError, match="no checkpoint"):
        generator_io.restore_generator(tiny_model(), str(tmp_path))


def test_restore_from_checkpoint_without_the_trainer(trained):
    trainer, run = trained
    ema, step = generator_io.restore_generator(tiny_model(), str(run / "checkpoints"))
    assert step == 4
    np.testing.assert_array_equal(_outputs(ema), _outputs(trainer.g_ema))
    raw, _ = generator_io.restore_generator(tiny_model(), str(run / "checkpoints"),
                                            use_ema=False)
    np.testing.assert_array_equal(_outputs(raw), _outputs(trainer.generator))
    older, step = generator_io.restore_generator(tiny_model(), str(run / "checkpoints"), step=2)
    assert step == 2 and not np.allclose(_outputs(older), _outputs(ema))
    with pytest.raises(WeightsError, match="no checkpoint at step 3"):
        generator_io.restore_generator(tiny_model(), str(run / "checkpoints"), step=3)


def test_default_model_weights_fit_in_one_megabyte(tmp_path):
    g = models.build_generator(preset("fashion_mnist").model)
    generator_io.save_generator_weights(g, str(tmp_path / "g.npz"))
    assert (tmp_path / "g.npz").stat().st_size < 1_000_000
