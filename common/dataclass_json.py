"""Frozen dataclasses from parsed JSON, strictly: the one deserialiser of configs and records.

A file from an older or newer format must be converted, never half-read, so an unknown key, a
missing required field, a null where the type has no None, or a value of the wrong type is an
error naming the field's dotted path. Floats accept ints (JSON writes 2.0 as 2 in some tools)
and become floats; bools are never ints. Nested dataclasses, `X | None`, `list[X]` and
`dict[str, X]` recurse; bare `list` and `dict` are taken as they are.
"""
from __future__ import annotations

import dataclasses
import types
import typing

_MISSING = (dataclasses.MISSING,)


def from_dict(cls, data, error: type[Exception] = ValueError, path: str = ""):
    """An instance of dataclass `cls` built from `data`; raises `error` naming the field."""
    where = path.rstrip(".") or cls.__name__
    if not isinstance(data, dict):
        raise error(f"{where} must be an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(path + k for k in set(data) - set(fields))
    if unknown:
        raise error(f"unknown field(s) {unknown} in {where}")
    missing = sorted(path + name for name, f in fields.items() if name not in data
                     and f.default in _MISSING and f.default_factory in _MISSING)
    if missing:
        raise error(f"missing field(s) {missing} in {where}")
    kwargs = {name: _value(hints[name], value, error, path + name)
              for name, value in data.items()}
    return cls(**kwargs)


def field_value(cls, name: str, value, error: type[Exception] = ValueError, path: str = ""):
    """`value` as `from_dict` takes it for the existing field `name` of dataclass `cls` (a
    float from an int), or `error` naming the field, before the whole instance is built."""
    return _value(typing.get_type_hints(cls)[name], value, error, path + name)


def _value(hint, value, error, path: str):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            if type(None) not in args:
                raise error(f"{path} may not be null")
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _value(inner[0], value, error, path)
        for option in inner:  # e.g. int | str: the first type the value has
            try:
                return _value(option, value, error, path)
            except error:
                continue
        raise error(f"{path}={value!r} has the wrong type (expected {_name(hint)})")
    if value is None:
        raise error(f"{path} may not be null")
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, error, path + ".")
    if origin is list and args:
        _expect(isinstance(value, list), hint, value, error, path)
        return [_value(args[0], v, error, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict and len(args) == 2:
        _expect(isinstance(value, dict), hint, value, error, path)
        return {k: _value(args[1], v, error, f"{path}.{k}") for k, v in value.items()}
    if hint is float:
        _expect(isinstance(value, (int, float)) and not isinstance(value, bool), hint, value,
                error, path)
        return float(value)
    if hint is int:
        _expect(isinstance(value, int) and not isinstance(value, bool), hint, value, error,
                path)
        return value
    if hint in (bool, str, list, dict):
        _expect(isinstance(value, hint), hint, value, error, path)
        return value
    return value  # typing.Any and other hints are taken as they are


def _expect(ok: bool, hint, value, error, path: str) -> None:
    if not ok:
        raise error(f"{path}={value!r} has the wrong type (expected {_name(hint)})")


def _name(hint) -> str:
    return getattr(hint, "__name__", None) if typing.get_origin(hint) is None else str(hint)
