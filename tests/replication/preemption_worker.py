"""One worker of the preemption tests: the tiny model, checkpointed every step, preemptible.

Usage: python preemption_worker.py SPEC OUT_DIR STEPS [SIGTERM_AT]. Writes
OUT_DIR/worker<index>/ (checkpoints, history.json) and, when training ends,
OUT_DIR/worker<index>.npz. Exits with replication.PREEMPTED_EXIT_CODE when preempted;
SIGTERM_AT only applies to the last worker (the one that is "preempted").
"""
import os
import sys

import numpy as np

import replication

if __name__ == "__main__":
    spec, out_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    repl = replication.make_replicator(spec)  # before any TF op: sets up collectives
    import tiny_training  # noqa: E402  (after the strategy, which must come first)

    repl.watch_preemption()
    last = repl.worker_index == repl.num_workers - 1
    sigterm_at = int(sys.argv[4]) if len(sys.argv) > 4 and last else None
    try:
        run = tiny_training.train_checkpointed(
            repl, os.path.join(out_dir, f"worker{repl.worker_index}"), steps, sigterm_at)
    except replication.Preempted as e:
        print(f"preempted at step {e.step}", flush=True)
        os._exit(replication.PREEMPTED_EXIT_CODE)  # no TF teardown (tests/conftest.py)
    np.savez(os.path.join(out_dir, f"worker{repl.worker_index}.npz"),
             resumed_from=run["resumed_from"], iterations=run["iterations"],
             workers=repl.num_workers, **{f"w{i}": w for i, w in enumerate(run["weights"])})
    sys.stdout.flush()
    os._exit(0)
