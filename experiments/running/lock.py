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

LOCK_FILE = ".lock"
_held: dict[str, int] = {}  # realpath of a lock file -> its open descriptor, for the process


class LockedError(UserError, RuntimeError):
    """Another live process holds the directory's lock."""


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
