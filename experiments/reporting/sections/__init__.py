"""The report's sections, one module each; report.py runs them in ORDER.

A section module defines KEY (its key in analysis.json) and ORDER, and
    compute(study, earlier) -> result | None   (None: nothing to report; `earlier` holds the
                                                results of the sections before it, by KEY)
    render(result, study) -> str               (Markdown: tables and fixed templates)
and may define draw(result, study) to write its figures into study.out_dir. Adding a section is
adding a module here: it is found by its KEY.
"""
from __future__ import annotations

import importlib
import pkgutil


def discover() -> list:
    """Every section module of this package, in ORDER."""
    modules = [importlib.import_module(f"{__name__}.{m.name}")
               for m in pkgutil.iter_modules(__path__)]
    return sorted((m for m in modules if hasattr(m, "KEY")), key=lambda m: m.ORDER)
