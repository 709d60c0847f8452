"""Logging set-up for the command line: plain lines on stdout, warnings and errors on stderr.

Library modules log through `logging.getLogger(__name__)`; only entry points call `setup`.
"""
from __future__ import annotations

import logging
import sys


class _MaxLevel(logging.Filter):
    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


class _Prefixed(logging.Formatter):
    """'warning: ...' / 'error: ...': a problem says what it is, and no caller types it."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {super().format(record)}"


def setup(level: int = logging.INFO) -> None:
    """Progress and results to stdout as bare messages, problems to stderr prefixed with their
    level ('warning: ...')."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    out = logging.StreamHandler(sys.stdout)
    out.addFilter(_MaxLevel(logging.WARNING))
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    out.setFormatter(logging.Formatter("%(message)s"))
    err.setFormatter(_Prefixed())
    for handler in (out, err):
        root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("tensorflow", "absl", "matplotlib", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
