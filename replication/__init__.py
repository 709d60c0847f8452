"""TF-Replicator's programming model on tf.distribute: input_fn + step_fn, run on N replicas.

Knows tf.distribute; knows nothing of GANs. The README's `replication/` section has an example.

Names are re-exported lazily (PEP 562), so `python -m replication.launch`, which only starts
processes, does not import TensorFlow.
"""
import importlib

_EXPORTS = {
    "collectives": ["all_gather", "all_reduce", "average_loss", "cross_replica_moments",
                    "num_replicas_in_sync", "replica_id", "scale_regularization_loss"],
    "devices": ["configure_logical_cpus", "configured_logical_cpus"],
    "launch": ["LaunchError", "WorkerResult", "launch_workers"],
    "randomness": ["global_normal", "global_uniform_int", "replica_normal",
                   "replica_uniform_int", "stream_key"],
    "replicator": ["DeviceUnavailableError", "ReplicatedOptimizer", "Replicator",
                   "make_replicator"],
    "specs": ["SPEC_FORMS", "ReplicatorSpec", "SpecError", "parse_spec"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f"replication.{_MODULE_OF[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'replication' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
