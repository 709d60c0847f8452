"""Cluster environments: SLURM variables and TF_CONFIG checked into one line naming the
variable at fault, TensorFlow's resolvers fed from them, ports, and 'auto''s choice."""
import json
import logging
import os
import socket

import pytest

import replication
from replication import clusters
from replication.clusters import ClusterConfigError
from replication.launch import slurm_envs
from replication.specs import DeviceUnavailableError, SpecError, parse_spec


@pytest.mark.parametrize("text,port,gpus", [("slurm", None, None),
                                            ("slurm:port=12345", 12345, None),
                                            ("slurm:gpus=2,port=9000", 9000, 2),
                                            ("slurm:gpus=0", None, 0)])
def test_slurm_specs_carry_port_and_gpus(text, port, gpus):
    spec = parse_spec(text)
    assert (spec.kind, spec.port, spec.gpus, spec.replicas) == ("slurm", port, gpus, None)
    assert spec.multi_worker


@pytest.mark.parametrize("text", ["slurm:", "slurm:port", "slurm:cpus=2", "slurm:port=0",
                                  "slurm:port=70000", "slurm:gpus=x", "slurm:port=1,port=2",
                                  "auto:gpu"])
def test_malformed_cluster_specs_name_the_forms(text):
    with pytest.raises(SpecError, match="slurm:port=P,gpus=G"):
        parse_spec(text)


def test_only_cluster_specs_may_be_one_of_several_workers():
    assert [parse_spec(s).multi_worker for s in ("multiworker", "slurm", "auto")] == [True] * 3
    assert not any(parse_spec(s).multi_worker for s in ("default", "cpu:2", "gpu", "tpu"))


def slurm_env(rank=0, tasks=2, port_base=20000, **changes):
    env = dict(slurm_envs(tasks, port_base)[rank])
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def test_a_faked_srun_task_resolves_to_consecutive_ports_on_its_node():
    task = clusters.slurm_task(slurm_env(rank=1))
    assert (task.rank, task.num_tasks, task.tasks_per_node) == (1, 2, {"localhost": 2})
    assert (task.port_base, task.gpus_per_task, task.assign_gpus) == (20000, 0, False)
    assert task.port_source == "SLURM_STEP_RESV_PORTS=20000-20001"
    # the spec's options win over the environment
    task = clusters.slurm_task(slurm_env(), port=31000, gpus=1)
    assert (task.port_base, task.gpus_per_task) == (31000, 1)
    assert "slurm:port=31000" in task.port_source
    # without reserved ports: SlurmClusterResolver's default
    assert clusters.slurm_task(slurm_env(SLURM_STEP_RESV_PORTS=None)).port_base == 8888


@pytest.mark.parametrize("changes,message", [
    ({"SLURM_STEP_NODELIST": None}, "SLURM_PROCID=0 is set but SLURM_STEP_NODELIST is not"),
    ({"SLURM_STEP_NUM_TASKS": None}, "SLURM_PROCID=0 is set but SLURM_STEP_NUM_TASKS is not"),
    ({"SLURM_STEP_TASKS_PER_NODE": ""}, "but SLURM_STEP_TASKS_PER_NODE is not"),
    ({"SLURM_PROCID": "first"}, "SLURM_PROCID='first' is not an integer"),
    ({"SLURM_PROCID": "2"}, r"SLURM_PROCID=2 is out of range: SLURM_STEP_NUM_TASKS=2"),
    ({"SLURM_STEP_NODELIST": "node[1-"}, "SLURM_STEP_NODELIST='node\\[1-' is not a SLURM host"),
    ({"SLURM_STEP_TASKS_PER_NODE": "2(x"}, "SLURM_STEP_TASKS_PER_NODE='2\\(x' is not"),
    ({"SLURM_STEP_NODELIST": "n[1-2]"}, "gives 1 node\\(s\\) but SLURM_STEP_NODELIST='n\\[1-2\\]' "
                                        "lists 2"),
    ({"SLURM_STEP_TASKS_PER_NODE": "3"}, "adds up to 3 tasks but SLURM_STEP_NUM_TASKS=2"),
    ({"SLURM_STEP_RESV_PORTS": "20000"}, "SLURM_STEP_RESV_PORTS='20000' is not a port range of "
                                         "at least 2"),
    ({"SLURM_GPUS_PER_TASK": "many"}, "SLURM_GPUS_PER_TASK='many'"),
    ({"SLURM_GPUS_PER_TASK": "2", "CUDA_VISIBLE_DEVICES": "0"},
     "SLURM_GPUS_PER_TASK=2 GPU\\(s\\) per task, but CUDA_VISIBLE_DEVICES='0' shows 1"),
])
def test_bad_or_partial_slurm_environments_name_the_variable(changes, message):
    with pytest.raises(ClusterConfigError, match=message) as err:
        clusters.slurm_task(slurm_env(**changes))
    assert "\n" not in str(err.value) and isinstance(err.value, DeviceUnavailableError)


def test_without_procid_the_message_says_to_use_srun():
    with pytest.raises(ClusterConfigError, match="SLURM_PROCID is not set.*srun"):
        clusters.slurm_task({})


@pytest.mark.parametrize("env,gpus,assign", [
    ({"SLURM_GPUS_PER_TASK": "a100:2", "CUDA_VISIBLE_DEVICES": "0,1"}, 2, False),  # bound
    ({"SLURM_GPUS_ON_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}, 2, True),  # 4 / 2 tasks
    ({"SLURM_GPUS_ON_NODE": "4"}, 2, False),
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, 0, False),  # no GPUs allocated by SLURM: the CPU
])
def test_gpus_per_task_come_from_slurm(env, gpus, assign):
    task = clusters.slurm_task(slurm_env(**env))
    assert (task.gpus_per_task, task.assign_gpus) == (gpus, assign)


def test_slurm_resolver_without_gpus_lays_out_the_cpu_workers(monkeypatch):
    # two nodes of two tasks: TensorFlow's order (sorted hosts, ports from the base per node)
    env = slurm_env(rank=3, tasks=4, SLURM_STEP_NODELIST="n[07-08]",
                    SLURM_STEP_TASKS_PER_NODE="2(x2)", SLURM_STEP_RESV_PORTS="20000-20001")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    resolver = clusters.slurm_resolver(clusters.slurm_task(env))
    assert resolver.cluster_spec().as_dict() == {
        "worker": ["n07:20000", "n07:20001", "n08:20000", "n08:20001"]}
    assert (resolver.task_type, resolver.task_id) == ("worker", 3)
    assert resolver.num_accelerators() == {}  # the CPU (tensorflow/tensorflow#56894)


def test_slurm_resolver_hands_each_task_its_gpus(monkeypatch):
    env = slurm_env(rank=1, SLURM_GPUS_ON_NODE="4", CUDA_VISIBLE_DEVICES="0,1,2,3")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    resolver = clusters.slurm_resolver(clusters.slurm_task(env))
    resolver.cluster_spec()
    assert resolver.num_accelerators() == {"GPU": 2}
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"  # task 1's half of the node


def tf_config(task_type="worker", index=0, **cluster):
    cluster = cluster or {"worker": ["127.0.0.1:20000", "127.0.0.1:20001"]}
    return {"TF_CONFIG": json.dumps({"cluster": cluster,
                                     "task": {"type": task_type, "index": index}})}


def test_tf_config_task_counts_the_chief_first():
    task = clusters.tf_config_task(tf_config("worker", 1, chief=["c:1"], worker=["w:1", "w:2"]))
    assert (task.workers, task.worker_index, task.address) == (3, 2, "w:2")
    task = clusters.tf_config_task(tf_config("chief", 0, chief=["c:1"], worker=["w:1"]))
    assert (task.workers, task.worker_index, task.address) == (2, 0, "c:1")


@pytest.mark.parametrize("env,message", [
    ({}, "needs the TF_CONFIG environment variable"),
    ({"TF_CONFIG": "{not json"}, "TF_CONFIG is not a valid cluster description"),
    (tf_config("worker", 2), r"TF_CONFIG task index 2 is out of range: cluster.worker lists 2 "
                             r"address\(es\) \(index 0..1\)"),
    (tf_config("worker", -1), "TF_CONFIG task index -1 is out of range"),
    (tf_config("worker", "1"), "TF_CONFIG task index '1' is out of range"),
    (tf_config("chief", 0), "TF_CONFIG task index 0 is out of range: cluster.chief lists 0"),
    (tf_config("evaluator", 0), "TF_CONFIG task type 'evaluator' is not 'chief' or 'worker'"),
    (tf_config("worker", 0, worker=["a:1"], ps=["p:1"]), r"TF_CONFIG cluster has \['ps'\]"),
])
def test_bad_tf_configs_say_what_is_wrong(env, message):
    with pytest.raises(ClusterConfigError, match=message) as err:
        clusters.tf_config_task(env)
    assert "\n" not in str(err.value)


def test_a_port_in_use_is_refused_naming_where_it_came_from():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(ClusterConfigError,
                           match=f"port {port} of this task .*from TF_CONFIG cluster.worker.1.*"
                                 "already in use"):
            clusters.require_free_port(f"127.0.0.1:{port}", "TF_CONFIG cluster.worker[1]")
    clusters.require_free_port(f"127.0.0.1:{port}", "released")  # free again: no error


@pytest.mark.parametrize("env,gpus,spec", [
    ({"TPU_NAME": "t1", "SLURM_PROCID": "0", **tf_config()}, 8, "tpu"),
    ({"SLURM_PROCID": "0", **tf_config()}, 8, "slurm"),
    (tf_config(), 8, "multiworker"),
    ({"TF_CONFIG": " "}, 2, "gpu"),
    ({}, 0, "default"),
])
def test_auto_takes_tpu_slurm_tf_config_gpus_then_the_cpu(env, gpus, spec, monkeypatch,
                                                          tmp_path):
    monkeypatch.setattr(clusters, "TPU_VM_DEVICE", str(tmp_path / "no_accel0"))
    chosen, why = clusters.choose_auto(env, lambda: gpus)
    assert chosen == spec and why
    (tmp_path / "no_accel0").touch()  # a TPU VM comes before SLURM and TF_CONFIG
    without_name = {k: v for k, v in env.items() if k != "TPU_NAME"}
    assert clusters.choose_auto(without_name, lambda: gpus)[0] == "tpu:local"


def test_auto_on_this_machine_is_the_cpu_and_says_why(monkeypatch, caplog):
    for key in ("TF_CONFIG", "TPU_NAME", "SLURM_PROCID"):
        monkeypatch.delenv(key, raising=False)
    with caplog.at_level(logging.INFO, logger="replication"):
        repl = replication.make_replicator("auto")
    assert (repl.spec, repl.num_replicas) == ("default", 1)
    assert "replicator auto: default, because no TPU, SLURM task, TF_CONFIG or GPU" in caplog.text


def test_auto_with_a_partial_slurm_environment_fails_like_slurm(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    monkeypatch.setenv("SLURM_PROCID", "0")
    for key in ("SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ClusterConfigError, match="SLURM_PROCID=0 is set but"):
        replication.make_replicator("auto")
