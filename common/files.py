"""Atomic file writes: a killed process leaves the old file or the new one, never half a file.

Every file the suite writes (records, caches, weights, figures) goes through `atomic_writer`:
write to a temporary file in the same directory, fsync, then `os.replace`.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
import zipfile


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w", suffix: str | None = None):
    """Yields a file opened on a temporary name; it replaces `path` only if the block succeeds.

    `suffix` sets the temporary file's extension, for writers that infer the format from it
    (matplotlib's savefig); it defaults to the target's own name.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-",
                               suffix=suffix or os.path.basename(path))
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_writer(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_writer(path, "w") as f:
        f.write(text)


def to_json(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n"


def atomic_write_json(path: str | os.PathLike, obj) -> None:
    atomic_write_text(path, to_json(obj))


def _jsonable(x):
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x)}")


def npz_bytes(arrays: dict) -> bytes:
    """An .npz (no pickle) with fixed timestamps and sorted keys: same arrays, same bytes, so a
    SHA-256 recorded beside weights identifies them across machines."""
    import numpy as np

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, array in sorted(arrays.items()):
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w") as f:
                np.lib.format.write_array(f, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def write_npz(path: str | os.PathLike, arrays: dict) -> str:
    """Atomically write `arrays` as a reproducible .npz; returns its SHA-256 (hex)."""
    data = npz_bytes(arrays)
    atomic_write_bytes(path, data)
    return hashlib.sha256(data).hexdigest()


def update_hash(h, path: str | os.PathLike) -> None:
    """Feed a file to a hashlib object in 1 MiB blocks (weights files can be large)."""
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    update_hash(h, path)
    return h.hexdigest()


def load_npz_into(variables: dict, path: str | os.PathLike, what: str) -> None:
    """Assign every array of the .npz at `path` (no pickle) to `variables[key]`; refuse a file
    with missing, extra or misshapen arrays (WeightsError naming `what` it should fit)."""
    import numpy as np

    from common.errors import WeightsError

    with np.load(path, allow_pickle=False) as npz:
        stored = {k: npz[k] for k in npz.files}
    if set(stored) != set(variables):
        missing, extra = sorted(set(variables) - set(stored)), sorted(set(stored) - set(variables))
        raise WeightsError(f"{path} does not fit the {what}: missing {missing[:3]}, unexpected "
                           f"{extra[:3]} (was it made with another config?)")
    for key, var in variables.items():
        if tuple(stored[key].shape) != tuple(var.shape):
            raise WeightsError(f"{path}: {key} has shape {stored[key].shape}, the {what} wants "
                               f"{tuple(var.shape)} (was it made with another config?)")
    for key, var in variables.items():
        var.assign(stored[key])
