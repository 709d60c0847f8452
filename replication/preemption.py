"""Preemption that loses no step: on SIGTERM every worker checkpoints at the same step, then
stops with a distinctive exit status; rerunning the same command resumes from that step.

TensorFlow's `tf.distribute.experimental.PreemptionCheckpointHandler` does the hard part: the
worker that receives SIGTERM agrees a step with all its peers through the coordination service
(MultiWorkerMirroredStrategy), or simply with itself (one worker: MirroredStrategy, the default
strategy). The training loop calls `PreemptionWatcher.after_step(save)` after every step;
at the agreed step `save()` runs on every worker and `Preempted` is raised.

One watcher serves a whole process (a sweep trains many points): the handler's coordination
keys can be claimed once per cluster, so a second handler would never see a preemption. Its
run counter therefore counts the steps of every point in turn, in lockstep on all workers,
and the checkpoint it is given is an empty one: saving is `save`, the trainer's own.

Where TensorFlow's handler does nothing (it detects Google Cloud CPU and TPU VMs and then
leaves SIGTERM alone), a SIGTERM still ends the process and the run resumes from its last
periodic checkpoint, as after a SIGKILL. This module imports TensorFlow only when a watcher is
built, so the command line can name the exit status without it.
"""
from __future__ import annotations

import logging
import os
import tempfile

log = logging.getLogger(__name__)

# The exit status of a preempted run: in Kubeflow's retryable range (128-255) for a TFJob with
# restartPolicy ExitCode, and unlike the 128+N of a process killed by signal N (up to 192).
PREEMPTED_EXIT_CODE = 199


class Preempted(Exception):
    """Every worker saved a checkpoint at `step` after a SIGTERM; run again to resume."""

    def __init__(self, step: int | None):
        self.step = step
        super().__init__(f"preempted (SIGTERM): checkpoint saved at step {step}; run the same "
                         "command again to resume from it")


class PreemptionWatcher:
    """TensorFlow's PreemptionCheckpointHandler for `replicator`'s strategy, one per process.

    Installs the SIGTERM handler when built (call it where training starts, in the main
    thread). A SIGTERM received outside a training loop is served after the next step.
    """

    def __init__(self, replicator):
        import tensorflow as tf

        self._save = None
        self._saved_step = None
        config = tf.distribute.experimental.TerminationConfig(
            exit_fn=self._exit, save_fn=self._save_now, grace_period=0)
        # An empty checkpoint in a directory never written: nothing to restore, and the
        # handler's step counter starts at 0 on every worker, which keeps them in lockstep.
        unused = os.path.join(tempfile.gettempdir(), f"preemption-unused-{os.getpid()}")
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(), unused, max_to_keep=1)
        self._handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            replicator.cluster_resolver, manager, termination_config=config)

    def after_step(self, save) -> None:
        """Call after every training step, on every worker. When a SIGTERM was received here
        or by a peer, the workers agree on a step; there `save()` (returning the step it
        saved) runs everywhere and Preempted is raised."""
        from tensorflow.python.util import deprecation

        self._save = save
        with deprecation.silence():  # the handler reads its own deprecated run counter
            self._handler.save_checkpoint_if_preempted()

    def _save_now(self):
        self._saved_step = self._save()
        log.info("preemption: checkpoint saved at step %s", self._saved_step)

    def _exit(self):
        raise Preempted(self._saved_step)
