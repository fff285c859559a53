"""Markdown building blocks of the reports: literal text and tables."""

import re

import pandas as pd

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def escape(text: str) -> str:
    """Escape markdown specials so a printed label (e.g. `-L*_cont(I,T)`) renders literally."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def table(header: list[str], body: list[list[str]], align: list[str] | None = None) -> list[str]:
    """Lines of a pipe table whose cells are markdown already (escaped where needed; kept verbatim, no
    number parsing); `align` gives each column's "left" or "right" (default: all left)."""
    frame = pd.DataFrame(body, columns=header, dtype=object)
    text = frame.to_markdown(index=False, tablefmt="pipe", disable_numparse=True, colalign=align)
    return text.splitlines()
