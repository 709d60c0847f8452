"""One writer per output directory: an exclusive flock on DIR/.lock holding the holder's pid
and command.

Two sweeps writing the same points would interleave checkpoints and overwrite each other's
records. The kernel releases a flock when its holder dies, even by SIGKILL, so a lock file
left behind never blocks anyone; the file itself stays (deleting it would race with the next
holder). flock is advisory and local: it may not hold across machines on NFS.
"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys

from common.errors import UserError
from replication.specs import parse_spec
from replication.startup import start_replicator

LOCK_FILE = ".lock"
_held: dict[str, int] = {}  # realpath of a lock file -> its open descriptor, for the process


class LockedError(UserError, RuntimeError):
    """Another live process holds the directory's lock."""


class NotADirectory(UserError, NotADirectoryError):
    """An output path names a file."""


def _holder(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 1 << 16).decode() or "{}")
    except (OSError, ValueError):
        return {}


def lock_dir(directory: str, command: str | None = None, what: str = "--out") -> str:
    """Take DIR/.lock for the rest of the process (re-entrant); returns its path.

    Raises LockedError naming the process that holds it. `command` (default: this process's
    argv) is recorded for that message.
    """
    path = os.path.join(directory, LOCK_FILE)
    key = os.path.realpath(path)
    if key in _held:
        return path
    usable_dir(directory, what)
    os.makedirs(directory, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(fd)
        os.close(fd)
        who = f"process {holder.get('pid', '?')}"
        if holder.get("command"):
            who += f" ({holder['command']})"
        raise LockedError(f"{what} {directory} is in use by {who}: wait for it to finish, or "
                          f"choose another {what}") from None
    os.ftruncate(fd, 0)
    command = shlex.join(sys.argv) if command is None else command
    os.write(fd, (json.dumps({"pid": os.getpid(), "command": command}) + "\n").encode())
    _held[key] = fd
    return path


def unlock_dir(directory: str) -> None:
    fd = _held.pop(os.path.realpath(os.path.join(directory, LOCK_FILE)), None)
    if fd is not None:
        os.close(fd)  # closing the only descriptor releases the flock


def usable_dir(directory: str, what: str = "--out") -> str:
    """`directory` if it is one or can be created (checked before anything is written)."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise NotADirectory(f"{what} {directory!r} is a file, not a directory: choose another "
                            "path")
    return directory


def own_output(out: str, command: str, replicator_spec: str,
               make_replicator=start_replicator):
    """Lock `out` for this process, then build the replicator (`make_replicator(spec)`,
    which starts TensorFlow); returns it and the directory this process writes.

    The lock comes before TensorFlow starts (a busy directory costs no start-up), except on a
    cluster (multiworker, slurm, auto): there every worker trains and writes its own directory
    (the chief `out`, the others `out/.workerN`, whose files are not results), known once the
    cluster is up.
    """
    multiworker = parse_spec(replicator_spec).multi_worker  # multiworker, slurm or auto
    if not multiworker:
        lock_dir(out, command)
    replicator = make_replicator(replicator_spec)
    if replicator.worker_index:
        out = os.path.join(out, f".worker{replicator.worker_index}")
    if multiworker:
        lock_dir(out, command)
    return replicator, out
