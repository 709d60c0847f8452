"""The base of every typed record: one strict JSON round trip and the error a bad file raises.

Score records (score_records.py), the point record (point_record.py) and the sweep's records
(sweep_files.py) all derive from `Record`, so each reads back through the one deserialiser
(common/dataclass_json.py) and fails with a `RecordError` naming the field.
"""
from __future__ import annotations

import dataclasses

from common.dataclass_json import from_dict
from common.errors import UserError


class RecordError(UserError, ValueError):
    """A record file exists but cannot be read as the record it should be."""


class Record:
    """`to_dict` / `from_dict` (strict: unknown or missing fields are errors) and `replace`."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict):
        return from_dict(cls, d, RecordError)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)
