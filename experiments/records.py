"""Files of a run directory, written atomically so a killed process never leaves half a file."""
from __future__ import annotations

import json
import os
import tempfile

METRICS = "metrics.json"
HISTORY = "eval_history.json"
CONFIG = "config.json"


def atomic_write_text(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")


def _jsonable(x):
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x)}")


def read_json(path: str, required_keys=(), log=print):
    """The parsed file, or None if it is missing or corrupt (corruption is reported)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            obj = json.load(f)
        missing = [k for k in required_keys if k not in obj]
        if missing:
            raise ValueError(f"missing keys {missing}")
        return obj
    except (ValueError, OSError) as e:
        log(f"warning: {path} is corrupt ({e}); this point will be recomputed")
        return None


def read_metrics(run_dir: str, log=print):
    """A finished point's record (status 'done' or 'diverged'), else None."""
    record = read_json(os.path.join(run_dir, METRICS), ("status", "config"), log)
    if record is not None and record["status"] not in ("done", "diverged"):
        log(f"warning: {run_dir}/{METRICS} has unknown status {record['status']!r}; recomputing")
        return None
    return record
