"""A markdown report as one self-contained HTML page (markdown-it-py, CommonMark with tables): what
`snakemake --report` shows, where a result is one file and a relative image link would lead nowhere, so the images
the step wrote are embedded.

Every string reaches the page escaped: raw HTML in the markdown passes only as the few tags the reports write
themselves (OWN_INLINE, OWN_BLOCK: collapsed sections, a cell's second line, underlines); any other (a metric JSON's
or a spec's text that slipped through unescaped) is shown as text. A page embeds only the images its step names as
written by it, never a path the markdown (and so a metric JSON or spec) gives."""

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
td:first-child { text-align: left; white-space: normal; min-width: 10em; max-width: 18em; }
tr:nth-child(even) td { background: #fafafa; }
td sub { color: #777; }
img { max-width: 100%; }
blockquote { border-left: 4px solid #e0a800; background: #fff8e1; margin: 0.5em 0; padding: 0.3em 0.8em; }
details { margin: 0.3em 0; }
summary { cursor: pointer; font-weight: 600; }
.wide { overflow-x: auto; }
"""
OWN_INLINE = re.compile(r"</?(u|sub)>|<br>")  # the inline tags the reports write (hypvl.replication.report_cells)
OWN_BLOCK = re.compile(r"(<details><summary>[\w ().,−-]+</summary>|</details>)\n?")  # report._details
_IMAGE = re.compile(r'<img src="([^"]*)"')
_REPORT_LINK = re.compile(r'href="([^":#]+)\.md"')  # a link to another report: its page, beside it


def _own_html(pattern: re.Pattern):
    """A markdown-it render rule passing raw HTML that fully matches `pattern`, escaping any other."""
    def render(self, tokens, index, options, env):
        text = tokens[index].content
        return text if pattern.fullmatch(text) else html.escape(text)
    return render


def _embed(match: re.Match, folder: Path, images: set[Path], source) -> str:
    """An <img> of a PNG the step wrote (one of `images`), the PNG as a data URI; InputError names the report and the
    image for any other."""
    path = (folder / html.unescape(match.group(1))).resolve()
    if path not in images:
        raise InputError(f"{source}: the report shows {match.group(1)!r}, which is no image this step wrote; "
                         "not embedded")
    if not path.is_file():
        raise InputError(f"{source}: the report shows {match.group(1)}, which does not exist")
    return f'<img src="data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"'


def to_html(markdown: str, folder: Path, images=(), source="report") -> str:
    """The page of `markdown`, the images of `images` (paths of PNGs the step wrote, which the markdown links relative
    to `folder`) embedded, its links to other reports leading to their pages, and each table scrolling on its own."""
    parser = require("markdown_it", "report").MarkdownIt("commonmark", {"html": True}).enable("table")
    parser.add_render_rule("html_inline", _own_html(OWN_INLINE))
    parser.add_render_rule("html_block", _own_html(OWN_BLOCK))
    body = parser.render(markdown)
    own = {Path(image).resolve() for image in images if Path(image).suffix == ".png"}
    body = _IMAGE.sub(lambda match: _embed(match, folder, own, source), body)
    body = _REPORT_LINK.sub(r'href="\1.html"', body)
    body = body.replace("<table>", '<div class="wide"><table>').replace("</table>", "</table></div>")
    title = html.escape(next((line[2:] for line in markdown.splitlines() if line.startswith("# ")), "report"))
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{_STYLE}</style></head>\n<body>\n{body}</body></html>\n")


def write_html(markdown_path, out, images=()) -> None:
    """Write `out`: the page of the markdown file `markdown_path`, atomically, embedding `images` (the PNGs its step
    wrote; any other image it shows is refused)."""
    markdown_path = Path(markdown_path)
    try:
        text = markdown_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{markdown_path}: report not found") from None
    page = to_html(text, markdown_path.parent, images, markdown_path)
    with atomic_write(out, mode="w", encoding="utf-8") as handle:
        handle.write(page)
