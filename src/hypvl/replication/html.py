"""A markdown report as one self-contained HTML page (markdown-it-py, CommonMark with tables): what
`snakemake --report` shows, where a result is one file and a relative image link would lead nowhere, so local
images are embedded."""

import base64
import html
import re
from pathlib import Path

from hypvl.errors import InputError, require
from hypvl.io import atomic_write

_STYLE = """
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 1.5em; max-width: 100%; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; white-space: nowrap; }
th { background: #f3f3f3; position: sticky; top: 0; }
td:first-child { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
td sub { color: #777; }
img { max-width: 100%; }
blockquote { border-left: 4px solid #e0a800; background: #fff8e1; margin: 0.5em 0; padding: 0.3em 0.8em; }
details { margin: 0.3em 0; }
summary { cursor: pointer; font-weight: 600; }
.wide { overflow-x: auto; }
"""
_IMAGE = re.compile(r'<img src="([^":]+\.png)"')
_REPORT_LINK = re.compile(r'href="([^":#]+)\.md"')  # a link to another report: its page, beside it


def _embed(match: re.Match, folder: Path) -> str:
    """An <img> of a local PNG with the PNG as a data URI; InputError names the report and the missing image."""
    path = folder / html.unescape(match.group(1))
    if not path.is_file():
        raise InputError(f"{folder}: the report shows {match.group(1)}, which does not exist")
    return f'<img src="data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"'


def to_html(markdown: str, folder: Path) -> str:
    """The page of `markdown`, its local images (relative to `folder`) embedded, its links to other reports leading
    to their pages, and each table scrolling on its own."""
    body = require("markdown_it", "report").MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    body = _IMAGE.sub(lambda match: _embed(match, folder), body)
    body = _REPORT_LINK.sub(r'href="\1.html"', body)
    body = body.replace("<table>", '<div class="wide"><table>').replace("</table>", "</table></div>")
    title = html.escape(next((line[2:] for line in markdown.splitlines() if line.startswith("# ")), "report"))
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{_STYLE}</style></head>\n<body>\n{body}</body></html>\n")


def write_html(markdown_path, out) -> None:
    """Write `out`: the page of the markdown file `markdown_path`, atomically."""
    markdown_path = Path(markdown_path)
    try:
        text = markdown_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{markdown_path}: report not found") from None
    with atomic_write(out, mode="w", encoding="utf-8") as handle:
        handle.write(to_html(text, markdown_path.parent))
