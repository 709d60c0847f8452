"""Replicator construction, input splitting, result collection and the optimizer wrapper."""
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import replication
from replication import DeviceUnavailableError, SpecError


@pytest.mark.parametrize("spec", ["", "cpu:0", "cpu:x", "cpu:-1", "gpu:1.5", "cpu:2:3",
                                  "mirrored", "default:1", "multiworker:2", "tpu:", None, 4])
def test_malformed_specs_are_rejected_naming_the_forms(spec):
    with pytest.raises(SpecError, match="cpu:N"):
        replication.make_replicator(spec)


def test_more_cpus_than_configured_names_counts_and_fix():
    with pytest.raises(DeviceUnavailableError,
                       match=r"needs 8 CPU.*sees 4.*configure_logical_cpus\(8\)"):
        replication.make_replicator("cpu:8")


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="this machine has GPUs")
@pytest.mark.parametrize("spec", ["gpu", "gpu:2"])
def test_gpu_spec_without_gpus_fails_instead_of_falling_back(spec):
    with pytest.raises(DeviceUnavailableError, match="GPU device.*sees 0"):
        replication.make_replicator(spec)


@pytest.mark.skipif("TPU_NAME" in os.environ, reason="a TPU may be configured")
def test_tpu_spec_without_tpu_fails():
    with pytest.raises(DeviceUnavailableError, match="needs a TPU"):
        replication.make_replicator("tpu")
    with pytest.raises(DeviceUnavailableError, match="nothing answers"):
        replication.make_replicator("tpu:grpc://127.0.0.1:1")


@pytest.mark.parametrize("tf_config,match", [(None, "needs the TF_CONFIG"),
                                             ("{not json", "not a valid cluster"),
                                             (json.dumps({"task": {}}), "not a valid cluster")])
def test_multiworker_without_a_cluster_fails(monkeypatch, tf_config, match):
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(DeviceUnavailableError, match=match):
        replication.make_replicator("multiworker")


def test_spec_attributes(replicator):
    assert (replicator("default").num_replicas, replicator("cpu:2").num_replicas,
            replicator("cpu:4").num_replicas) == (1, 2, 4)
    assert replication.make_replicator("cpu").num_replicas == 4  # all logical CPUs
    repl = replicator("cpu:4")
    assert (repl.spec, repl.num_workers, repl.worker_index) == ("cpu:4", 1, 0)


def test_logical_cpu_configuration_is_idempotent_and_fails_clearly_when_too_late():
    replication.configure_logical_cpus(4)
    replication.configure_logical_cpus(2)
    with pytest.raises(RuntimeError, match="already started with 4"):
        replication.configure_logical_cpus(6)


def test_default_inside_another_scope_is_an_error(replicator):
    with replicator("cpu:2").context(), pytest.raises(RuntimeError, match="another strategy"):
        replication.make_replicator("default")


def test_global_batch_must_split_evenly(replicator):
    repl = replicator("cpu:4")
    assert repl.per_replica_batch(12) == 3
    with pytest.raises(ValueError, match="global batch 10 is not divisible by the 4 replicas"):
        repl.per_replica_batch(10)
    with pytest.raises(ValueError, match="global batch 10 is not divisible"):
        repl.distribute(lambda ctx: tf.data.Dataset.range(40).batch(2), 10)


def test_input_fn_batching_by_the_global_batch_is_caught(replicator):
    with pytest.raises(ValueError, match="batches of 8 rows.*needs 2"):
        replicator("cpu:4").distribute(
            lambda ctx: tf.data.Dataset.range(40).batch(8, drop_remainder=True), 8)


def test_replicas_together_see_consecutive_global_batches(replicator):
    repl = replicator("cpu:2")
    data = repl.distribute(lambda ctx: tf.data.Dataset.range(12).batch(
        ctx.get_per_replica_batch_size(4), drop_remainder=True), 4)
    identity = tf.function(lambda b: repl.gather(repl.run(tf.identity, b)))
    assert [identity(b).numpy().tolist() for b in data] == [[0, 1, 2, 3], [4, 5, 6, 7],
                                                             [8, 9, 10, 11]]


def test_reduce_gather_and_local_results_of_nests(replicator):
    repl = replicator("cpu:4")
    values = repl.distribute_values(lambda r: tf.constant([float(r), 10.0 * r]))

    @tf.function
    def collect(v):
        out = repl.run(lambda v: {"vec": v, "scalar": v[1]}, v)
        return repl.reduce(out, "sum"), repl.reduce(out, "mean"), repl.gather(out)

    total, mean, gathered = collect(values)
    np.testing.assert_allclose(total["vec"], [6.0, 60.0])
    np.testing.assert_allclose(mean["scalar"], 15.0)
    np.testing.assert_allclose(gathered["vec"], [0, 0, 1, 10, 2, 20, 3, 30])
    np.testing.assert_allclose(gathered["scalar"], [0, 10, 20, 30])
    local = repl.local_results(repl.run(lambda v: v * 2, values))
    assert len(local) == 4 and np.allclose(local[3], [6.0, 60.0])
    with pytest.raises(ValueError, match="'max'"):
        repl.reduce(values, "max")


def test_optimizer_made_outside_the_context_is_rejected(replicator):
    repl = replicator("cpu:2")
    with pytest.raises(ValueError, match="created outside"):
        repl.wrap_optimizer(keras.optimizers.Adam())


@pytest.mark.parametrize("kwargs", [{"clipnorm": 1.0}, {"global_clipnorm": 1.0},
                                    {"clipvalue": 1.0}, {"gradient_accumulation_steps": 2}])
def test_per_replica_gradient_transforms_are_rejected(replicator, kwargs):
    repl = replicator("cpu:2")
    with repl.context(), pytest.raises(ValueError, match="replica count"):
        repl.wrap_optimizer(keras.optimizers.SGD(**kwargs))


def test_unbuilt_optimizer_and_cross_replica_apply_are_errors(replicator):
    repl = replicator("cpu:2")
    with repl.context():
        w = tf.Variable([1.0, 2.0])
        opt = repl.wrap_optimizer(keras.optimizers.Adam(0.1))
    with pytest.raises(RuntimeError, match="build"):
        opt.apply_gradients([(tf.ones(2), w)])
    opt.build([w])
    with repl.context(), pytest.raises(RuntimeError, match="inside Replicator.run"):
        opt.apply_gradients([(tf.ones(2), w)])


def test_adam_update_counts_one_iteration_per_step_on_four_replicas(replicator):
    repl = replicator("cpu:4")
    with repl.context():
        w = tf.Variable([0.0, 0.0])
        opt = repl.wrap_optimizer(keras.optimizers.Adam(0.1, beta_1=0.0, beta_2=0.9), [w])
    grads = repl.distribute_values(lambda r: tf.constant([1.0, -float(r)]))
    step = tf.function(lambda g: repl.run(lambda g: opt.apply_gradients([(g, w)]), g))
    step(grads)
    step(grads)
    assert int(opt.iterations.numpy()) == 2
    # Adam's first step moves each weight by lr * sign(summed gradient): sums are 4 and -6.
    np.testing.assert_allclose(w.numpy(), [-0.2, 0.2], rtol=1e-3)


def test_new_replicators_over_the_same_devices_get_their_own_collective_keys():
    """Without distinct keys the second all-reduce (another shape) aborts all collectives."""
    for shape in ([3], [5, 2], [7]):
        repl = replication.make_replicator("cpu:2")
        step = tf.function(lambda: repl.run(lambda: replication.all_reduce(tf.ones(shape))))
        np.testing.assert_array_equal(repl.local_results(step())[1], np.full(shape, 2.0))


def test_device_kind_on_this_machine():
    import tensorflow as tf

    from replication import make_replicator
    expected = "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
    assert make_replicator("default").device_kind == expected
    assert make_replicator("cpu:2").device_kind == "CPU"
