"""Markdown the sections share: a table from a header and rows of cells, and the one number
formatter ('-' stands for a value that is missing or not a number)."""
from __future__ import annotations


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def number(x, spec: str = ".2f") -> str:
    return "-" if x is None or x != x else format(x, spec)


def plus_minus(mean, sd, spec: str = ".2f", sd_spec: str | None = None) -> str:
    """'6.10 ± 0.14'; the mean alone where there is no sd."""
    if mean is None or sd is None:
        return number(mean, spec)
    return f"{number(mean, spec)} ± {number(sd, sd_spec or spec)}"


def change(ratio) -> str:
    """A ratio as a % change: 1.492 -> '+49.2%'."""
    return "-" if ratio is None or ratio != ratio else f"{100 * (ratio - 1):+.1f}%"


def change_interval(interval) -> str:
    """A RatioInterval (or its dict) as '+49.2% [+40.5, +58.5]'."""
    get = interval.get if isinstance(interval, dict) else lambda k: getattr(interval, k)
    return (f"{change(get('ratio'))} [{change(get('low')).rstrip('%')}, "
            f"{change(get('high')).rstrip('%')}]")
