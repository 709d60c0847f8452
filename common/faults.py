"""Fault injection for tests: SIGKILL this process at the n-th occurrence of a named event.

    SNGAN_FAULT_AT=<event>:<n>[+<seconds>][,<event>:<n>[+<seconds>]...]

kills the process (SIGKILL: no cleanup, no atexit, like a power cut or the OOM killer) when
`reached(event)` is called for the n-th time, at the first of the listed faults to come;
with `+seconds` a timer thread kills it that long afterwards instead, so the kill lands
inside the work that follows the event (a checkpoint or record being written, an evaluation
running). Events (where they are reached):

    step           after each training step           (sngan/training.py)
    checkpoint     before a checkpoint is written     (sngan/training.py)
    eval           before an evaluation starts        (experiments/evaluation/evaluator.py)
    history_write  before eval_history.json is written (experiments/records.py)
    record_write   before metrics.json is written     (experiments/records.py)

Unset (always, outside tests), `reached` costs one environment lookup.
"""
from __future__ import annotations

import os
import signal
import threading

ENV_VAR = "SNGAN_FAULT_AT"
EVENTS = ("step", "checkpoint", "eval", "history_write", "record_write")
_counts: dict[str, int] = {}


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def parse(spec: str) -> list[tuple[str, int, float | None]]:
    """'eval:2+0.05,step:3' -> [('eval', 2, 0.05), ('step', 3, None)]."""
    faults = []
    for item in spec.split(","):
        event, _, rest = item.strip().partition(":")
        count, _, delay = rest.partition("+")
        if event not in EVENTS or not count.isdigit() or int(count) < 1:
            raise ValueError(f"{ENV_VAR}={spec!r}: expected <event>:<n>[+<seconds>][,...] "
                             f"with event in {EVENTS} and n >= 1")
        faults.append((event, int(count), float(delay) if delay else None))
    return faults


def reached(event: str) -> None:
    spec = os.environ.get(ENV_VAR)
    if not spec:
        return
    _counts[event] = _counts.get(event, 0) + 1
    for target, count, delay in parse(spec):
        if target != event or _counts[event] != count:
            continue
        if delay is None:
            _kill()
        timer = threading.Timer(delay, _kill)
        timer.daemon = True
        timer.start()
