"""One worker of the two-process loopback test; started by replication.launch with TF_CONFIG.

Usage: python multiworker_worker.py OUT_DIR STEPS. Writes OUT_DIR/worker<index>.npz.
"""
import os
import sys

import numpy as np

import replication

if __name__ == "__main__":
    out_dir, steps = sys.argv[1], int(sys.argv[2])
    repl = replication.make_replicator("multiworker")  # before any TF op: sets up collectives
    import tiny_training  # noqa: E402  (after the strategy, which must come first)

    run = tiny_training.train(repl, synchronized=True, steps=steps)
    assert repl.num_workers == 2 and repl.num_replicas == 2, repl
    np.savez(os.path.join(out_dir, f"worker{repl.worker_index}.npz"),
             losses=run["losses"], iterations=run["iterations"],
             **{f"w{i}": w for i, w in enumerate(run["weights"])})
