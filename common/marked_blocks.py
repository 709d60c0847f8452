"""Generated blocks inside hand-written Markdown: the text between `<!-- TAG: NAME -->` and
`<!-- /TAG: NAME -->` is replaced by what NAME renders to; everything else is left alone.

benchmarks/build_docs.py (docs/benchmarks.md) and experiments/reporting/build_docs.py (the
README's and docs/study.md's results) both use it, each with its own TAG."""
from __future__ import annotations

import re
import typing


def pattern(tag: str) -> re.Pattern:
    return re.compile(rf"(<!-- {tag}: (\w+) -->\n)(.*?)(<!-- /{tag}: \2 -->)", re.S)


def rebuild(text: str, tag: str, render: typing.Callable[[str], str]) -> str:
    """`text` with every TAG block re-rendered: `render(name)` returns the block's body (ending
    in a newline) and refuses a name it does not know (SystemExit)."""
    return pattern(tag).sub(lambda m: m.group(1) + render(m.group(2)) + m.group(4), text)
