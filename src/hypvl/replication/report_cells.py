"""The cells and grids of a report's tables: our numbers at one more decimal than the paper prints, the paper's as
printed (bold, underline), differences, and each cell's verdict mark."""

import pandas as pd

from hypvl.spec.expected import ExpectedTable
from hypvl.outside.extras import EXTRA_ROW
from hypvl.replication.markdown import code, escape
from hypvl.replication.markdown import table as markdown_table

MARKERS = {  # verdict -> its mark in the tables (none the papers print: they use ✓ and × in their own labels)
    "within": "●",
    "outside": "◆",  # a metric with no direction; a directed one is marked by its standing (OUTSIDE_MARKERS)
    "within_seed_spread": "◐",
    "not_comparable": "n/c",
    "no_paper_value": "n/p",
    "missing": "?",
    "external": "ext.",
    "extra": "–",
}
OUTSIDE_MARKERS = {"better": "▲", "worse": "▼", "off": "◆"}  # an outside cell's standing -> its mark

def decimals(expected: ExpectedTable) -> dict[str, int]:
    """Column -> decimals for our numbers: one more than the paper prints in that column (2 if it prints none)."""
    decimals = {}
    for column in expected.columns:
        printed = [expected.cells[(row, column)].printed for row in expected.rows]
        places = [len(text.partition(".")[2]) for text in printed if text is not None]
        decimals[column] = max(places) + 1 if places else 2
    return decimals


def paper_cell(expected: ExpectedTable, row: str, column: str) -> str:
    """The paper's cell as printed, bold as **x** and underline as <u>x</u>."""
    cell = expected.cells[(row, column)]
    text = cell.printed if cell.printed is not None else escape(cell.token)
    if cell.underline:
        text = f"<u>{text}</u>"
    if cell.bold:
        text = f"**{text}**"
    return text


def marker(line) -> str:
    """A cell's verdict marker (an outside cell's: its standing's); a missing cell's reason after it."""
    marker = escape(OUTSIDE_MARKERS.get(line.standing, MARKERS[line.verdict]) if line.verdict == "outside"
                    else MARKERS[line.verdict])
    return f"{marker} {escape(line.reason)}" if line.verdict == "missing" else marker


def ours_cell(line, places: int) -> str:
    """Our number (mean ± standard deviation for a row trained with several seeds), or the missing (with its
    reason) or external marker."""
    if line.verdict in ("missing", "external"):
        return marker(line)
    return f"{line.ours:.{places}f}" + (f" ± {line.spread:.{places}f}" if line.n_seeds > 1 else "")


def seeds_note(frame: pd.DataFrame) -> list[str]:
    """The line under the Ours grid naming the rows averaged over several seeds (none: no line)."""
    counts = frame.groupby("row", sort=False)["n_seeds"].max().dropna()
    seeded = counts[counts > 1]
    if seeded.empty:
        return []
    if len(seeded) == len(counts) and seeded.nunique() == 1:
        return ["", f"Mean ± standard deviation over {seeded.iloc[0]} seeds in every measured row (config `seeds`)."]
    rows = ", ".join(f"{code(row)} ({count} seeds)" for row, count in seeded.items())
    return ["", f"Mean ± standard deviation over the seeds of the rows trained with several (config `seeds`): {rows}."]


def delta_cell(line, places: int) -> str:
    """ours - paper with its verdict marker, or the marker alone where there is no difference."""
    if pd.isna(line.delta):
        return marker(line)
    return f"{line.delta:+.{places}f} {marker(line)}"


def grid(expected: ExpectedTable, cell_text, rows: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """A printed-layout table: label columns, then one column per value column; cell_text(row, column) -> str.
    `rows`: row id -> (printed row whose labels it shows, mark appended to its last label); default the
    printed rows, unmarked."""
    label_columns = list(expected.labels[expected.rows[0]])
    header = [escape(name.lstrip("_")) for name in label_columns] or ["row"]
    header += [escape(column) for column in expected.columns]
    body = []
    for row, (printed, mark) in (rows or {row: (row, "") for row in expected.rows}).items():
        labels = ([expected.labels[printed][name] for name in label_columns] or [printed] if printed
                  else [""] * (len(label_columns) - 1) + [row.removeprefix(EXTRA_ROW)])
        labels[-1] += mark
        body.append([escape(label) for label in labels] + [cell_text(row, column) for column in expected.columns])
    return markdown_table(header, body)


def compact_cell(line, places: int) -> str:
    """Ours (± the seeds' spread) with its verdict mark (none where not comparable: the banner says so), and under
    it the paper's number, small and grey (the line under the table says so: no word in the cell, so that a table of
    16 columns fits a page); the missing or external marker alone."""
    if line.verdict in ("missing", "external"):
        return marker(line)
    spread = f"±{line.spread:.{places}f}" if line.n_seeds > 1 else ""
    mark = "" if line.verdict == "not_comparable" else f" {marker(line)}"
    paper = f"<br><sub>{escape(line.paper_text)}</sub>" if line.paper_text else ""  # none under an extra model's
    return f"{line.ours:.{places}f}{spread}{mark}{paper}"


def compact_grid(expected: ExpectedTable, labels: dict[str, str], cell_text) -> list[str]:
    """Ours beside the paper: one label column (a compared row's printed labels and mark), then the value columns."""
    body = [[escape(label)] + [cell_text(row, column) for column in expected.columns] for row, label in labels.items()]
    return markdown_table(["row", *map(escape, expected.columns)], body)
