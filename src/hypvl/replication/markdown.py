"""Markdown building blocks of the reports: literal text, code spans and tables (every string from a metric JSON,
compare CSV or spec goes through `escape` or `code`)."""

import re

from tabulate import tabulate

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def escape(text: str) -> str:
    """Escape markdown specials so a printed label (e.g. `-L*_cont(I,T)`) renders literally, on one line (HTML
    included: `<` is escaped)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).splitlines()))


def code(text, cell: bool = False) -> str:
    """`text` as a code span that renders literally whatever it holds (a backtick ends a span of one: the span is
    fenced by a longer run than any inside; a line break would end a table row; in a table `cell`, a pipe its
    cell)."""
    text = " ".join(str(text).splitlines())
    text = text.replace("|", "\\|") if cell else text
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(header: list[str], body: list[list[str]], align: list[str] | None = None) -> list[str]:
    """Lines of a pipe table whose cells are markdown already (escaped where needed; kept verbatim, no
    number parsing); `align` gives each column's "left" or "right" (default: all left)."""
    text = tabulate(body, headers=header, tablefmt="pipe", disable_numparse=True, colalign=align)
    return text.splitlines()
