"""A run directory's config guards its results: a finished result or a checkpoint of another
config is refused, cadences may change, and commands that need a run say what is missing."""
import os
import sys

import pytest

from experiments import records
from experiments.configs import preset
from experiments.running import run_dir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "reporting"))
from fake_results import fake_point  # noqa: E402


def cfg(**overrides):
    return preset("fashion_mnist", {"train.global_batch_size": 16, "train.seed": 0,
                                    "train.steps": 100, **overrides})


@pytest.fixture
def finished(tmp_path):
    fake_point(str(tmp_path), 16, 0, 3.0, 80.0)
    return str(tmp_path / "points" / "bs0016_seed0")


def test_differences_skip_the_fields_that_do_not_change_results():
    assert run_dir.config_differences(cfg(), cfg(**{"train.log_every": 1, "eval.every": 7,
                                                    "train.replicator": "cpu:2"})) == []
    assert run_dir.config_differences(cfg(), cfg(**{"train.steps": 99, "model.g_ch": 8})) == [
        "model.g_ch", "train.steps"]


def test_a_finished_point_is_returned_to_its_config_and_refused_to_another(finished):
    assert run_dir.finished_record(cfg(), finished).status == "done"
    assert run_dir.check(finished, cfg(**{"eval.every": 3})) is not None
    with pytest.raises(run_dir.ConfigMismatchError, match=r"differs in train.steps\)"):
        run_dir.check(finished, cfg(**{"train.steps": 7}))


def test_a_checkpoint_of_another_config_is_refused_and_claim_records_the_config(tmp_path):
    run = str(tmp_path / "run")
    run_dir.claim(run, cfg())
    assert records.read_config(run) == cfg()
    assert not run_dir.has_checkpoint(run)
    os.makedirs(os.path.join(run, run_dir.CHECKPOINTS))
    open(os.path.join(run, run_dir.CHECKPOINTS, "ckpt-5.index"), "w").close()
    assert run_dir.has_checkpoint(run)
    with pytest.raises(run_dir.ConfigMismatchError, match="holds a checkpoint made with"):
        run_dir.claim(run, cfg(**{"model.d_ch": 8}))
    run_dir.claim(run, cfg(**{"train.checkpoint_every": 3}))  # resumable


def test_commands_on_a_run_say_what_is_missing(tmp_path, finished):
    with pytest.raises(run_dir.NotARunError, match="does not exist"):
        run_dir.require_config(str(tmp_path / "nowhere"))
    with pytest.raises(run_dir.NotARunError, match="config.json is missing or unreadable"):
        run_dir.require_config(str(tmp_path))
    with pytest.raises(run_dir.NotARunError, match="has no finished record"):
        run_dir.require_record(str(tmp_path))
    assert run_dir.require_config(finished) == records.read_config(finished)
    record = run_dir.require_record(finished)
    with pytest.raises(run_dir.NotARunError, match="no checkpoint and no committed generator"):
        run_dir.require_generator(finished, record)  # the fake point has no weights
    weights = os.path.join(finished, records.GENERATOR)
    open(weights, "wb").close()
    run_dir.require_generator(finished, record.replace(generator_weights=records.GENERATOR))
