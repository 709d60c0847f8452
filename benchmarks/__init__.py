"""Speed benchmarks, run on demand from the repository root as `python -m benchmarks.NAME`.

One module per job: `peak` (this machine's float32 conv/matmul peak), `step` (training step
time and FLOP rate per preset and batch), `evaluation` (one evaluation, bare vs full),
`sweep` (a finished sweep end to end), `replicator` (the Replicator's overhead), `metrics`
(scoring back ends). Each writes benchmarks/results/NAME.json with the machine it ran on;
`python -m benchmarks.build_docs` renders those files into docs/benchmarks.md.
"""
