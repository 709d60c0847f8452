"""The TF-Replicator programming model on tf.distribute: a spec in, a Replicator out.

The researcher writes an `input_fn` and a single-device-looking `step_fn`; the Replicator
feeds every replica its share of the global batch and runs the step everywhere:

    repl = make_replicator("cpu:4")              # or "default", "gpu:8", "slurm", "auto", ...
    with repl.context():                         # variables created here are replicated
        model = build_model()
        opt = repl.wrap_optimizer(keras.optimizers.Adam(2e-4), model.trainable_variables)
    batches = iter(repl.distribute(input_fn, global_batch_size=64))

    @tf.function
    def train_step(batch):
        return repl.reduce(repl.run(step_fn, batch), "sum")

All communication is tf.distribute's; this module only chooses the strategy, checks what
the strategy would accept silently (uneven batches, optimizers built outside the scope,
per-replica gradient clipping), and names things the way the paper does.
"""
from __future__ import annotations

import itertools
import logging
import os
import socket
import threading

import keras
import tensorflow as tf

from replication import clusters, devices
from replication.specs import (  # noqa: F401  (re-exported)
    SPEC_FORMS,
    DeviceUnavailableError,
    SpecError,
    parse_spec,
)

log = logging.getLogger(__name__)

_REDUCE_OPS = {"sum": tf.distribute.ReduceOp.SUM, "mean": tf.distribute.ReduceOp.MEAN}


class Replicator:
    """One strategy plus the TF-Replicator verbs. Build it with `make_replicator(spec)`.

    Attributes: spec, strategy (the tf.distribute.Strategy, an escape hatch), num_replicas
    (all workers together), num_workers, worker_index (0 except on a cluster), preemption
    (the process's PreemptionWatcher once `watch_preemption` was called, else None).
    """

    preemption = None

    def __init__(self, spec: str, strategy: tf.distribute.Strategy,
                 num_workers: int = 1, worker_index: int = 0):
        self.spec = spec
        self.strategy = strategy
        self.num_replicas = int(strategy.num_replicas_in_sync)
        self.num_workers = num_workers
        self.worker_index = worker_index

    def __repr__(self) -> str:
        return (f"Replicator({self.spec!r}, replicas={self.num_replicas}, "
                f"workers={self.num_workers}, worker_index={self.worker_index})")

    @property
    def cluster_resolver(self):
        """The cluster resolver of a multi-worker strategy; None for one process."""
        return self.strategy.cluster_resolver

    def watch_preemption(self):
        """From now on a SIGTERM makes every worker save at the same step (the training loop
        calls `preemption.after_step`); see replication/preemption.py. Call once, in the main
        thread, where training starts; returns the process's PreemptionWatcher."""
        if self.preemption is None:
            from replication.preemption import PreemptionWatcher
            self.preemption = PreemptionWatcher(self)
        return self.preemption

    @property
    def device_kind(self) -> str:
        """'TPU', 'GPU' or 'CPU': the kind of device the replicas run on."""
        try:
            devices = " ".join(self.strategy.extended.worker_devices).upper()
        except RuntimeError:  # the default strategy: TensorFlow's default placement
            devices = "GPU:" if tf.config.list_logical_devices("GPU") else "CPU:"
        return next((k for k in ("TPU", "GPU") if f"{k}:" in devices), "CPU")

    # -- construction of state -------------------------------------------------------------
    def context(self):
        """Context manager: variables (model, optimizer, metrics) created inside are replicated."""
        return self.strategy.scope()

    def wrap_optimizer(self, optimizer, variables=None) -> ReplicatedOptimizer:
        """Make a Keras 3 optimizer usable inside `run`; see ReplicatedOptimizer.

        Pass `variables` to build its slots now (under the scope), or call `.build` later.
        """
        wrapped = ReplicatedOptimizer(optimizer, self)
        if variables is not None:
            wrapped.build(variables)
        return wrapped

    # -- input -----------------------------------------------------------------------------
    def per_replica_batch(self, global_batch: int) -> int:
        """Rows each replica gets of a global batch; ValueError if it does not split evenly."""
        if not isinstance(global_batch, int) or global_batch < 1:
            raise ValueError(f"global batch must be a positive int, got {global_batch!r}")
        if global_batch % self.num_replicas:
            raise ValueError(f"global batch {global_batch} is not divisible by the "
                             f"{self.num_replicas} replicas of '{self.spec}'")
        return global_batch // self.num_replicas

    def distribute(self, input_fn, global_batch_size: int):
        """Per-replica datasets from `input_fn(tf.distribute.InputContext)`.

        `input_fn` is called once per worker (input pipeline); it should shard by
        `ctx.input_pipeline_id` when workers > 1 and batch by
        `ctx.get_per_replica_batch_size(global_batch_size)` with drop_remainder=True. The
        replicas of a worker take consecutive batches, so at every step the replicas together
        see one global batch of `global_batch_size` rows. A static batch dimension that is not
        the per-replica batch is rejected here rather than silently training on another size.
        """
        per_replica = self.per_replica_batch(global_batch_size)

        def checked_input_fn(ctx: tf.distribute.InputContext):
            dataset = input_fn(ctx)
            for spec in tf.nest.flatten(dataset.element_spec):
                shape = getattr(spec, "shape", None)
                if shape is not None and shape.rank and shape[0] is not None \
                        and shape[0] != per_replica:
                    raise ValueError(
                        f"input_fn returned batches of {shape[0]} rows but each of the "
                        f"{self.num_replicas} replicas of '{self.spec}' needs {per_replica} "
                        f"(global batch {global_batch_size}); batch by "
                        "ctx.get_per_replica_batch_size(global_batch_size)")
            return dataset

        return self.strategy.distribute_datasets_from_function(checked_input_fn)

    def distribute_values(self, value_fn):
        """Per-replica values from host data: `value_fn(replica_id: int) -> tensor`."""
        return self.strategy.experimental_distribute_values_from_function(
            lambda ctx: value_fn(ctx.replica_id_in_sync_group))

    # -- running and collecting ------------------------------------------------------------
    def run(self, step_fn, *args, **kwargs):
        """Run `step_fn(*args, **kwargs)` on every replica; returns per-replica values.

        Call it inside a tf.function (one trace serves every step). Arguments that are
        per-replica (from `distribute`/`distribute_values`) arrive as that replica's part.
        """
        return self.strategy.run(step_fn, args=args, kwargs=kwargs)

    def reduce(self, per_replica, op: str = "sum"):
        """Sum or mean of a per-replica tensor (or nest) over replicas, e.g. for logging."""
        if op not in _REDUCE_OPS:
            raise ValueError(f"reduce op must be one of {tuple(_REDUCE_OPS)}, got {op!r}")
        # leaf by leaf: MultiWorkerMirroredStrategy packs a nest into one all-reduce, which
        # fails for tensors of different ranks (TF 2.21: "Shapes must be equal rank")
        return tf.nest.map_structure(
            lambda v: self.strategy.reduce(_REDUCE_OPS[op], v, axis=None), per_replica)

    def gather(self, per_replica, axis: int = 0):
        """Concatenate per-replica results along `axis` in replica order (all workers).

        Accepts a nest (strategy.gather alone silently returns replica 0's value for a
        tuple) and scalars, which become a vector of length num_replicas.
        """
        def one(value):
            if self.strategy.experimental_local_results(value)[0].shape.rank == 0:
                value = self.strategy.run(lambda t: t[tf.newaxis], args=(value,))
            return self.strategy.gather(value, axis=axis)

        return tf.nest.map_structure(one, per_replica)

    def local_results(self, per_replica) -> tuple:
        """The values held by this worker's replicas, one entry per local replica."""
        return tuple(self.strategy.experimental_local_results(per_replica))


class ReplicatedOptimizer:
    """A Keras 3 optimizer made legal in `Replicator.run`, with its gradient contract explicit.

    Contract (verified by tests/replication/test_equivalence.py): `apply_gradients` inside a
    replica step SUMS each gradient over all replicas before the update (Keras 3's TensorFlow
    optimizer all-reduces with SUM in replica context). A replica's loss must therefore be
    its per-example losses summed and divided by the GLOBAL batch (`average_loss`); the sum
    over replicas is then the gradient of the global-batch mean, equal to one device's.

    What the wrapper adds:
    - `build(variables)` under the strategy scope: an unbuilt optimizer creates its slots on
      the first step inside a replica, which fails with a placeholder error;
    - a check that the optimizer was created under the same scope: one created outside still
      sums gradients but counts `iterations` once per replica (or fails, for Adam);
    - refusal of clipnorm / clipvalue / global_clipnorm / gradient accumulation / EMA, which
      Keras applies to each replica's gradient BEFORE the all-reduce, so their effect would
      depend on the replica count.
    """

    _PER_REPLICA_FEATURES = ("clipnorm", "clipvalue", "global_clipnorm",
                             "gradient_accumulation_steps", "use_ema")

    def __init__(self, optimizer, replicator: Replicator):
        if keras.backend.backend() != "tensorflow":
            raise RuntimeError("ReplicatedOptimizer needs the Keras TensorFlow backend, "
                               f"got {keras.backend.backend()!r}")
        used = [f for f in self._PER_REPLICA_FEATURES if getattr(optimizer, f, None)]
        if used:
            raise ValueError(
                f"optimizer {optimizer.name!r} sets {used}: Keras applies these to each "
                "replica's gradient before summing over replicas, so results would depend on "
                "the replica count. Clip or accumulate the summed gradients yourself instead.")
        strategy = replicator.strategy
        foreign = [v.path for v in optimizer.variables
                   if not strategy.extended.variable_created_in_scope(_tf_variable(v))]
        if foreign:
            raise ValueError(
                f"optimizer {optimizer.name!r} was created outside {replicator!r}.context() "
                f"(its variables {foreign} are not replicated); create it inside the context")
        self.optimizer = optimizer
        self._replicator = replicator

    def build(self, variables) -> None:
        """Create the optimizer's slot variables for `variables`, under the strategy scope."""
        with self._replicator.context():
            self.optimizer.build(list(variables))

    def apply_gradients(self, grads_and_vars):
        """Sum gradients over replicas and update; call inside a replica step."""
        if not self.optimizer.built:
            raise RuntimeError("call ReplicatedOptimizer.build(model.trainable_variables) "
                               "before the first step: slots cannot be created inside a replica")
        if self._replicator.num_replicas > 1 and tf.distribute.in_cross_replica_context():
            raise RuntimeError("apply_gradients must be called inside Replicator.run(step_fn): "
                               "in cross-replica context gradients would not be summed")
        return self.optimizer.apply_gradients(grads_and_vars)

    @property
    def iterations(self):
        """Number of updates applied (counted once per step, not once per replica)."""
        return self.optimizer.iterations

    @property
    def learning_rate(self):
        return self.optimizer.learning_rate

    @property
    def variables(self):
        return self.optimizer.variables


def _tf_variable(v):
    return v.value if isinstance(v, keras.Variable) else v


# -- construction from a spec ---------------------------------------------------------------
def make_replicator(spec: str) -> Replicator:
    """A Replicator for `spec`, one of SPEC_FORMS; never falls back to other hardware.

    default      TensorFlow's default strategy: one device, no replication overhead.
    cpu / cpu:N  MirroredStrategy over all / the first N logical CPUs (see configure_logical_cpus).
    gpu / gpu:N  MirroredStrategy over all / the first N local GPUs.
    multiworker  MultiWorkerMirroredStrategy from TF_CONFIG (TFConfigClusterResolver; the
                 Kubernetes TFJob path).
    slurm        MultiWorkerMirroredStrategy from SlurmClusterResolver (one task per worker,
                 started by srun); slurm:port=P,gpus=G override the port and GPUs per task.
    auto         The first of TPU, SLURM, TF_CONFIG, local GPUs, CPU the environment shows;
                 logs its choice and why.
    tpu / tpu:A  TPUStrategy via TPUClusterResolver (A: TPU name, grpc://host:port, or local).

    Cluster specs must be built before any TF op runs. A bad or partial cluster environment
    raises clusters.ClusterConfigError naming the variable at fault, before anything connects.
    """
    parsed = parse_spec(spec)
    if parsed.cpu_only:  # other kinds let TensorFlow probe later, after their own checks
        devices.probe_platforms_without_cuda_line()
    if parsed.kind == "auto":
        chosen, why = clusters.choose_auto(
            os.environ, lambda: len(tf.config.list_physical_devices("GPU")))
        log.info("replicator auto: %s, because %s", chosen, why)
        return make_replicator(chosen)
    if parsed.kind == "default":
        if tf.distribute.has_strategy():
            raise RuntimeError("make_replicator('default') was called inside another "
                               "strategy's scope; call it outside any scope")
        return Replicator(spec, tf.distribute.get_strategy())
    if parsed.kind in ("cpu", "gpu"):
        return _local_devices(spec, parsed.kind, parsed.count)
    if parsed.kind == "multiworker":
        return _multiworker(spec)
    if parsed.kind == "slurm":
        return _slurm(spec, parsed.port, parsed.gpus)
    return _tpu(spec, parsed.address)


def _local_devices(spec: str, kind: str, count: int | None) -> Replicator:
    names = devices.logical_device_names(kind.upper())
    wanted = count or len(names)
    if not names or wanted > len(names):
        if kind == "cpu":
            hint = (f"call replication.configure_logical_cpus({wanted}) before TensorFlow "
                    "starts (tests/conftest.py does this for tests)")
        else:
            hint = "check CUDA and the visible devices (CUDA_VISIBLE_DEVICES)"
        raise DeviceUnavailableError(
            f"replicator spec {spec!r} needs {wanted or 'at least 1'} {kind.upper()} "
            f"device(s) but TensorFlow sees {len(names)}: {hint}")
    return Replicator(spec, _mirrored_strategy(names[:wanted]))


_COLLECTIVE_KEY_STRIDE = 100_000
_collective_key_bases = itertools.count(_COLLECTIVE_KEY_STRIDE, _COLLECTIVE_KEY_STRIDE)
_collective_key_lock = threading.Lock()


def _mirrored_strategy(device_names: list[str]) -> tf.distribute.MirroredStrategy:
    """A MirroredStrategy whose collective group keys no other strategy in this process uses.

    Each MirroredStrategy numbers its collective groups from 1 + `_collective_key_base`, and
    TensorFlow's collective executor is process-wide: a `cpu:4` strategy built after a
    `cpu:2` one would join group 1 with the wrong size and abort every later collective
    ("joining a group with size 4, but that group has size 2"). TensorFlow's own tests give
    each strategy a fresh base (distribute/strategy_combinations.py); so do we.
    """
    cls = tf.distribute.MirroredStrategy
    with _collective_key_lock:
        default_base = cls._collective_key_base
        cls._collective_key_base = next(_collective_key_bases)  # read once, in __init__
        try:
            return cls(devices=device_names)
        finally:  # strategies built elsewhere keep TensorFlow's numbering, below ours
            cls._collective_key_base = default_base


def _multiworker(spec: str) -> Replicator:
    task = clusters.tf_config_task(os.environ)
    clusters.require_free_port(task.address, f"TF_CONFIG cluster.{task.task_type}[{task.index}]")
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return _multiworker_replicator(spec, resolver, task.workers, task.worker_index)


def _slurm(spec: str, port: int | None, gpus: int | None) -> Replicator:
    task = clusters.slurm_task(os.environ, port=port, gpus=gpus)
    resolver = clusters.slurm_resolver(task)
    cluster = resolver.cluster_spec()  # SlurmClusterResolver learns its task from this call
    address = cluster.task_address(resolver.task_type, resolver.task_id)
    clusters.require_free_port(address, f"SLURM_PROCID={task.rank} on "
                                        f"{address.rpartition(':')[0]}, {task.port_source}")
    log.info("replicator slurm: task %d of %d at %s, %d GPU(s) per task from %s", task.rank,
             task.num_tasks, address, task.gpus_per_task, task.gpus_source)
    return _multiworker_replicator(spec, resolver, task.num_tasks, task.rank)


def _multiworker_replicator(spec: str, resolver, num_workers: int, worker_index: int):
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    except RuntimeError as e:
        raise RuntimeError(
            f"{e}: call make_replicator({spec!r}) before TensorFlow runs its first op "
            "(right after the imports)") from e
    return Replicator(spec, strategy, num_workers=num_workers, worker_index=worker_index)


def _tpu(spec: str, address: str | None) -> Replicator:
    if address and address.startswith("grpc://"):
        _require_reachable(spec, address)  # TF would otherwise wait for it forever
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=address)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as e:
        raise DeviceUnavailableError(
            f"replicator spec {spec!r} needs a TPU but none was found ({e}); set TPU_NAME, "
            "or use 'tpu:NAME', 'tpu:grpc://HOST:PORT' or 'tpu:local' on a TPU VM") from e
    return Replicator(spec, tf.distribute.TPUStrategy(resolver))


def _require_reachable(spec: str, address: str, timeout_s: float = 10.0) -> None:
    host, _, port = address[len("grpc://"):].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as e:
        raise DeviceUnavailableError(
            f"replicator spec {spec!r}: nothing answers at {address} ({e})") from e

