"""The report's sections, one module each; report.py runs them in ORDER.

A section module defines KEY (its key in analysis.json) and ORDER, and
    compute(study, earlier) -> result | None   (a typed result, frozen dataclasses; None:
                                                nothing to report; `earlier` holds the results
                                                of the sections before it, by KEY)
    render(result, study) -> str               (Markdown: tables and fixed templates)
and may define draw(result, study) to write its figures into study.out_dir. `json_values` turns a
result into what analysis.json holds. Adding a section is adding a module here.
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import pkgutil


def discover() -> list:
    """Every section module of this package, in ORDER."""
    modules = [importlib.import_module(f"{__name__}.{m.name}")
               for m in pkgutil.iter_modules(__path__)]
    return sorted((m for m in modules if hasattr(m, "KEY")), key=lambda m: m.ORDER)


def json_values(value):
    """Plain JSON values of a result: a dataclass as its to_dict() or its fields, an enum as its
    value, containers element by element."""
    if hasattr(value, "to_dict"):
        return json_values(value.to_dict())
    if dataclasses.is_dataclass(value):
        return {f.name: json_values(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: json_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_values(v) for v in value]
    return value
