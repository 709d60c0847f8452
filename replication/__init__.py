"""TF-Replicator's programming model on tf.distribute: input_fn + step_fn, run on N replicas.

Knows tf.distribute; knows nothing of GANs. The README's `replication/` section has an example.

Names are re-exported lazily (PEP 562), so `python -m replication.launch`, which only starts
processes, does not import TensorFlow.
"""
from common.lazy_exports import lazy_exports

_EXPORTS = {
    "batch_norm": ["cross_replica_batch_norm"],
    "clusters": ["ClusterConfigError"],
    "collectives": ["all_gather", "all_reduce", "average_loss", "cross_replica_moments",
                    "num_replicas_in_sync", "replica_id", "scale_regularization_loss"],
    "devices": ["configure_logical_cpus", "configured_logical_cpus"],
    "launch": ["LaunchError", "WorkerResult", "launch_workers"],
    "preemption": ["PREEMPTED_EXIT_CODE", "Preempted", "PreemptionWatcher"],
    "randomness": ["global_normal", "global_uniform_int", "replica_normal",
                   "replica_uniform_int", "stream_key"],
    "replicator": ["DeviceUnavailableError", "ReplicatedOptimizer", "Replicator",
                   "make_replicator"],
    "specs": ["SPEC_FORMS", "ReplicatorSpec", "SpecError", "parse_spec"],
    "startup": ["start_replicator"],
}
__getattr__, __dir__, __all__ = lazy_exports("replication", _EXPORTS, globals())
