"""Where a worker finds its cluster: SLURM's environment, TF_CONFIG, or (for 'auto') whatever
the environment shows.

TensorFlow's resolvers (SlurmClusterResolver, TFConfigClusterResolver) read the same variables,
but a partial environment makes them fail deep inside, or makes a worker wait forever for peers
that were never described. Everything is therefore checked here first, and a bad or partial
environment is one line naming the variable that is missing or wrong. The resolvers still do the
resolving; nothing here launches or wires workers.
"""
from __future__ import annotations

import json
import logging
import os
import re
import socket
from dataclasses import dataclass

from replication.specs import DeviceUnavailableError

log = logging.getLogger(__name__)

DEFAULT_SLURM_PORT = 8888  # SlurmClusterResolver's port_base
TPU_VM_DEVICE = "/dev/accel0"  # the first TPU chip's device file on a Cloud TPU VM


class ClusterConfigError(DeviceUnavailableError):
    """The cluster environment (SLURM variables, TF_CONFIG, a port) is missing or wrong."""


# -- SLURM ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SlurmTask:
    """This task's place in its SLURM job step, checked, in SlurmClusterResolver's terms."""
    rank: int
    num_tasks: int
    tasks_per_node: dict  # host -> tasks there, in SLURM_STEP_NODELIST order
    port_base: int
    port_source: str
    gpus_per_task: int
    gpus_source: str
    visible_gpus: int | None  # CUDA_VISIBLE_DEVICES entries, None when unset

    @property
    def max_tasks_per_node(self) -> int:
        return max(self.tasks_per_node.values())

    @property
    def assign_gpus(self) -> bool:
        """Whether the resolver narrows CUDA_VISIBLE_DEVICES to this task's share: only when
        the task sees more GPUs than its own (with --gpus-per-task SLURM binds them itself)."""
        return self.gpus_per_task > 0 and (self.visible_gpus or 0) > self.gpus_per_task


def _slurm_var(env, name: str, why: str) -> str:
    value = env.get(name)
    if value is None or not value.strip():
        rank = env.get("SLURM_PROCID")
        context = (f"SLURM_PROCID={rank} is set but {name} is not" if rank is not None
                   else f"{name} is not set")
        raise ClusterConfigError(
            f"{context} ({why}): start every task with srun (inside an sbatch script, see "
            "scripts/slurm_sweep.sbatch), which sets the SLURM_STEP_* variables")
    return value.strip()


def _int_var(name: str, value: str, minimum: int) -> int:
    if not re.fullmatch(r"\d+", value) or int(value) < minimum:
        raise ClusterConfigError(f"{name}={value!r} is not an integer >= {minimum}")
    return int(value)


def _visible_gpus(env) -> int | None:
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    devices = []
    for d in value.split(","):  # CUDA stops at the first invalid entry ("-1": none)
        if not d.strip() or d.strip().startswith("-"):
            break
        devices.append(d)
    return len(devices)


def slurm_task(env, port: int | None = None, gpus: int | None = None) -> SlurmTask:
    """This task's SLURM step, from `env` (os.environ), or ClusterConfigError naming the
    variable at fault. `port`/`gpus` (spec 'slurm:port=P,gpus=G') override the environment."""
    from tensorflow.python.distribute.cluster_resolver import slurm_cluster_resolver as tf_slurm

    rank = _int_var("SLURM_PROCID", _slurm_var(env, "SLURM_PROCID", "this task's rank"), 0)
    num_tasks = _int_var("SLURM_STEP_NUM_TASKS", _slurm_var(
        env, "SLURM_STEP_NUM_TASKS", "the number of tasks in the job step"), 1)
    nodelist = _slurm_var(env, "SLURM_STEP_NODELIST", "the hosts of the job step")
    per_node = _slurm_var(env, "SLURM_STEP_TASKS_PER_NODE", "how many tasks run on each host")
    try:
        hosts = tf_slurm.expand_hostlist(nodelist)
    except ValueError:
        raise ClusterConfigError(f"SLURM_STEP_NODELIST={nodelist!r} is not a SLURM host list "
                                 "(e.g. 'node[01-04],gpu7')") from None
    try:
        counts = tf_slurm.expand_tasks_per_node(per_node)
    except ValueError:
        raise ClusterConfigError(f"SLURM_STEP_TASKS_PER_NODE={per_node!r} is not a SLURM "
                                 "tasks-per-node list (e.g. '2(x3),1')") from None
    if len(hosts) != len(counts) or len(set(hosts)) != len(hosts):
        raise ClusterConfigError(
            f"SLURM_STEP_TASKS_PER_NODE={per_node!r} gives {len(counts)} node(s) but "
            f"SLURM_STEP_NODELIST={nodelist!r} lists {len(hosts)} (distinct: "
            f"{len(set(hosts))})")
    if sum(counts) != num_tasks:
        raise ClusterConfigError(
            f"SLURM_STEP_TASKS_PER_NODE={per_node!r} adds up to {sum(counts)} tasks but "
            f"SLURM_STEP_NUM_TASKS={num_tasks}")
    if rank >= num_tasks:
        raise ClusterConfigError(f"SLURM_PROCID={rank} is out of range: "
                                 f"SLURM_STEP_NUM_TASKS={num_tasks} (ranks 0..{num_tasks - 1})")
    tasks_per_node = dict(zip(hosts, counts))
    most = max(counts)

    if port is not None:
        port_base, port_source = port, f"--replicator slurm:port={port}"
    elif env.get("SLURM_STEP_RESV_PORTS"):  # srun --resv-ports: e.g. '12000-12003'
        value = env["SLURM_STEP_RESV_PORTS"]
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", value.strip())
        if not match or int(match.group(match.lastindex)) - int(match.group(1)) + 1 < most:
            raise ClusterConfigError(
                f"SLURM_STEP_RESV_PORTS={value!r} is not a port range of at least {most} ports "
                f"(one per task on a node): run srun --resv-ports={most}, or give "
                "--replicator slurm:port=P")
        port_base, port_source = int(match.group(1)), f"SLURM_STEP_RESV_PORTS={value}"
    else:
        port_base, port_source = DEFAULT_SLURM_PORT, "SlurmClusterResolver's default port"
    if port_base + most - 1 > 65535:
        raise ClusterConfigError(f"{port_source}: ports {port_base}..{port_base + most - 1} "
                                 "do not all exist")

    visible = _visible_gpus(env)
    if gpus is not None:
        gpus_per_task, gpus_source = gpus, f"--replicator slurm:gpus={gpus}"
    elif env.get("SLURM_GPUS_PER_TASK"):  # srun --gpus-per-task=[type:]N
        value = env["SLURM_GPUS_PER_TASK"]
        match = re.fullmatch(r"(?:[\w-]+:)?(\d+)", value.strip())
        if not match:
            raise ClusterConfigError(f"SLURM_GPUS_PER_TASK={value!r} is not [type:]count")
        gpus_per_task, gpus_source = int(match.group(1)), f"SLURM_GPUS_PER_TASK={value}"
    elif env.get("SLURM_GPUS_ON_NODE"):
        on_node = _int_var("SLURM_GPUS_ON_NODE", env["SLURM_GPUS_ON_NODE"].strip(), 0)
        gpus_per_task = on_node // most
        gpus_source = f"SLURM_GPUS_ON_NODE={on_node} shared by up to {most} task(s) a node"
    else:
        gpus_per_task, gpus_source = 0, "SLURM_GPUS_PER_TASK and SLURM_GPUS_ON_NODE, unset"
    if gpus_per_task and visible is not None and visible < gpus_per_task:
        raise ClusterConfigError(
            f"{gpus_source} GPU(s) per task, but CUDA_VISIBLE_DEVICES="
            f"{env['CUDA_VISIBLE_DEVICES']!r} shows {visible}")
    return SlurmTask(rank, num_tasks, tasks_per_node, port_base, port_source, gpus_per_task,
                     gpus_source, visible)


def slurm_resolver(task: SlurmTask):
    """TensorFlow's SlurmClusterResolver for `task` (it reads the same variables itself).

    Without GPUs it cannot build a cluster spec (tensorflow/tensorflow#56894: it steps through
    the node's GPUs with a stride of gpus_per_task, 0); its layout is then taken with one
    placeholder GPU per task and handed on in a SimpleClusterResolver that reports none.
    """
    import tensorflow as tf

    resolvers = tf.distribute.cluster_resolver
    most = task.max_tasks_per_node
    if task.gpus_per_task:
        per_node = task.visible_gpus if task.assign_gpus else task.gpus_per_task * most
        if per_node < task.gpus_per_task * most:
            raise ClusterConfigError(
                f"{most} task(s) on a node with {task.gpus_source} GPU(s) each need "
                f"{task.gpus_per_task * most} GPUs, but CUDA_VISIBLE_DEVICES shows {per_node}")
        return resolvers.SlurmClusterResolver(
            port_base=task.port_base, gpus_per_node=per_node, gpus_per_task=task.gpus_per_task,
            auto_set_gpu=task.assign_gpus)
    layout = resolvers.SlurmClusterResolver(port_base=task.port_base, gpus_per_node=most,
                                            gpus_per_task=1, auto_set_gpu=False)
    spec = layout.cluster_spec()
    task_type, task_id = layout.get_task_info()
    return resolvers.SimpleClusterResolver(spec, task_type=task_type, task_id=task_id,
                                           num_accelerators={}, rpc_layer="grpc")


# -- TF_CONFIG (Kubernetes TFJob, or written by hand) ------------------------------------------
@dataclass(frozen=True)
class TFConfigTask:
    task_type: str
    index: int
    workers: int  # chief + workers: the processes that train
    worker_index: int  # 0 for the chief, then the workers in order
    address: str


def tf_config_task(env) -> TFConfigTask:
    """This process's task in TF_CONFIG, checked, or ClusterConfigError naming what is wrong."""
    raw = env.get("TF_CONFIG")
    if not raw or not raw.strip():
        raise ClusterConfigError(
            "replicator spec 'multiworker' needs the TF_CONFIG environment variable (cluster "
            "and task; a Kubernetes TFJob sets it); on one machine start the workers with "
            "`python -m replication.launch`")
    try:
        config = json.loads(raw)
        cluster, task = config["cluster"], config["task"]
        task_type, index = task["type"], task["index"]
        chiefs, workers = list(cluster.get("chief", [])), list(cluster.get("worker", []))
    except (ValueError, KeyError, TypeError) as e:
        raise ClusterConfigError(
            f"TF_CONFIG is not a valid cluster description ({e!r}); expected "
            '{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", '
            '"index": i}}') from None
    others = sorted(set(cluster) - {"chief", "worker"})
    if others:
        raise ClusterConfigError(
            f"TF_CONFIG cluster has {others} tasks: MultiWorkerMirroredStrategy trains on "
            "'chief' and 'worker' tasks only (no parameter servers or evaluators)")
    if task_type not in ("chief", "worker"):
        raise ClusterConfigError(f"TF_CONFIG task type {task_type!r} is not 'chief' or "
                                 "'worker'")
    addresses = chiefs if task_type == "chief" else workers
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(addresses):
        raise ClusterConfigError(
            f"TF_CONFIG task index {index!r} is out of range: cluster.{task_type} lists "
            f"{len(addresses)} address(es)" + (f" (index 0..{len(addresses) - 1})"
                                               if addresses else ""))
    offset = len(chiefs) if task_type == "worker" else 0
    return TFConfigTask(task_type, index, len(chiefs) + len(workers), offset + index,
                        str(addresses[index]))


# -- ports ------------------------------------------------------------------------------------
def require_free_port(address: str, source: str) -> None:
    """Refuse to start when this task's own port is taken: TensorFlow's gRPC server would fail
    or peers would reach the wrong process. Checked like a server binds (all interfaces, address
    reuse allowed, so connections of an earlier run lingering in TIME_WAIT do not count)."""
    host, _, port_text = address.rpartition(":")
    if not host or not port_text.isdigit():
        raise ClusterConfigError(f"{source}: {address!r} is not host:port")
    port = int(port_text)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError as e:
            raise ClusterConfigError(
                f"port {port} of this task ({address}, from {source}) is already in use on "
                f"this machine ({e.strerror}): stop what holds it, or choose another port"
            ) from None


# -- auto -------------------------------------------------------------------------------------
def choose_auto(env, gpu_count) -> tuple[str, str]:
    """(spec, why) for 'auto': TPU, SLURM, TF_CONFIG, local GPUs or the CPU, in that order.

    `gpu_count()` is asked last, since it initialises the GPUs (after SLURM may have narrowed
    CUDA_VISIBLE_DEVICES, and TF_CONFIG must come before TensorFlow's runtime starts).
    """
    if env.get("TPU_NAME"):
        return "tpu", f"TPU_NAME={env['TPU_NAME']} is set (a Cloud TPU)"
    if os.path.exists(TPU_VM_DEVICE):
        return "tpu:local", f"{TPU_VM_DEVICE} exists (a Cloud TPU VM)"
    if env.get("SLURM_PROCID") is not None:
        return "slurm", (f"SLURM_PROCID={env['SLURM_PROCID']} is set (a task started by srun)")
    if env.get("TF_CONFIG", "").strip():
        return "multiworker", "TF_CONFIG is set (a Kubernetes TFJob or a hand-written cluster)"
    gpus = gpu_count()
    if gpus:
        return "gpu", f"TensorFlow sees {gpus} GPU(s) on this machine"
    return "default", "no TPU, SLURM task, TF_CONFIG or GPU found: one CPU device"
