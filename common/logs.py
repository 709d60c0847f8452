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


def setup(level: int = logging.INFO) -> None:
    """Progress and results to stdout, problems to stderr, as bare messages."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    out = logging.StreamHandler(sys.stdout)
    out.addFilter(_MaxLevel(logging.WARNING))
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    for handler in (out, err):
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("tensorflow", "absl", "matplotlib", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
