"""The environment a point's runs started in: measured, written beside the point, kept in its
record, and a resume under another one refused in one line unless allowed (then both kept)."""
import importlib.metadata
import platform

import pytest

from experiments import environment, records
from experiments.environment import EnvironmentChangedError


def test_current_names_the_stack_the_cpu_and_the_devices():
    env = environment.current(["/job:localhost/replica:0/task:0/device:CPU:0"], "default", 7)
    assert env.source == "measured" and env.started_at_step == 7
    assert env.python == platform.python_version()
    assert env.packages["tensorflow"] == importlib.metadata.version("tensorflow")
    assert env.packages["numpy"] == importlib.metadata.version("numpy")
    assert set(env.packages) == set(environment.PACKAGES)
    assert env.devices == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert set(env.cpu_flags) <= set(environment.CPU_FLAGS)
    assert env.suite_commit is None or len(env.suite_commit) == 40
    assert records.Environment.from_dict(env.to_dict()) == env


def _other(env, **packages):
    return env.replace(packages={**env.packages, **packages})


def test_a_resume_under_another_stack_is_refused_in_one_line(tmp_path):
    run = str(tmp_path)
    first = environment.current([], "default", 0)
    assert environment.start(run, first, resuming=False, allow_change=False) == [first]
    later = _other(environment.current([], "default", 500), tensorflow="9.9.9")
    with pytest.raises(EnvironmentChangedError) as e:
        environment.start(run, later, resuming=True, allow_change=False)
    msg = str(e.value)
    assert "\n" not in msg and "9.9.9" in msg and "environment_change_ok=true" in msg
    assert records.read_environments(run) == [first]  # nothing written by a refusal
    kept = environment.start(run, later, resuming=True, allow_change=True)
    assert kept == [first, later] == records.read_environments(run)


def test_an_unchanged_resume_adds_nothing_and_other_devices_are_no_change(tmp_path):
    run = str(tmp_path)
    first = environment.current(["cpu:0"], "default", 0)
    environment.start(run, first, resuming=False, allow_change=False)
    same = first.replace(started_at_step=500, devices=["cpu:0", "cpu:1"], replicator="cpu:2")
    assert environment.start(run, same, resuming=True, allow_change=False) == [first]


def test_differences_name_each_changed_field():
    a = environment.current([], "default", 0)
    b = _other(a, numpy="0.0.1").replace(cpu_model="Other CPU", suite_commit="f" * 40)
    diff = environment.differences(a, b)
    assert f"numpy {a.packages['numpy']} -> 0.0.1" in diff
    assert any(d.startswith("cpu model ") and d.endswith("-> Other CPU") for d in diff)
    assert any(d.startswith("suite commit ") and d.endswith("-> ffffffffff") for d in diff)
    assert environment.differences(a, a) == []


def test_a_fresh_start_forgets_an_earlier_unfinished_run(tmp_path):
    run = str(tmp_path)
    old = _other(environment.current([], "default", 0), tensorflow="1.0")
    environment.start(run, old, resuming=False, allow_change=False)
    new = environment.current([], "default", 0)
    assert environment.start(run, new, resuming=False, allow_change=False) == [new]
