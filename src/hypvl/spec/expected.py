"""The papers' printed numbers: load and validate one `expected/<paper>/table<N>.csv`.

File format (one file per printed results table):
  * UTF-8, comma-separated, a header row, then one line per printed row in printed order.
  * First column `row`: a slug (`[a-z0-9_]`) unique in the file.
  * Columns whose header starts with `_` are descriptive labels, kept as text.
  * Every other column is a value column: a number exactly as printed (within ±NUMBER_LIMIT), optionally marked
    `**x**` (bold), `__x__` (underlined) or `**__x__**` (both), or one of the tokens in `TOKENS`.
"""

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from hypvl.errors import InputError, number_problem, shown

TOKENS = ("-", "dnc", "n/a")  # not reported / blank as printed; did not converge; not applicable

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)")
_SLUG = re.compile(r"[a-z0-9][a-z0-9_]*")
_LABEL = re.compile(r"_[a-z0-9][a-z0-9_]*")


@dataclass(frozen=True)
class Cell:
    """One value cell: `text` as in the file, `printed` the number string without marks.

    `value` is the number as float, or None for a token (`token` then holds it).
    """

    text: str
    value: float | None
    token: str | None
    bold: bool
    underline: bool
    printed: str | None


@dataclass
class ExpectedTable:
    """A printed table: row slugs in printed order, label texts, value columns and cells.

    labels[row][label_column] -> str; cells[(row, value_column)] -> Cell.
    """

    path: Path
    rows: list[str]
    labels: dict[str, dict[str, str]]
    columns: list[str]
    cells: dict[tuple[str, str], Cell]

    def value(self, row: str, column: str) -> float | None:
        """The number printed at (row, column), or None where the paper prints a token."""
        return self.cells[(row, column)].value


def _strip_mark(text: str, mark: str) -> tuple[str, bool]:
    """Remove one `mark` pair around `text`; return the inner text and whether it was there."""
    width = len(mark)
    if len(text) > 2 * width and text.startswith(mark) and text.endswith(mark):
        return text[width:-width], True
    return text, False


def parse_cell(text: str) -> Cell:
    """Parse a value cell (`41.7`, `**__41.7__**`, `dnc`, ...); ValueError says what is wrong."""
    if text in TOKENS:
        return Cell(text=text, value=None, token=text, bold=False, underline=False, printed=None)
    inner, bold = _strip_mark(text, "**")
    inner, underline = _strip_mark(inner, "__")
    if _NUMBER.fullmatch(inner):
        value = float(inner)  # a 400-digit cell reads as inf
        if number_problem(value) is not None:
            raise ValueError(f"{shown(inner)} is {number_problem(value)} (as a float: {value})")
        return Cell(text=text, value=value, token=None, bold=bold, underline=underline, printed=inner)
    if text == "":
        raise ValueError("empty value cell (write '-' for a blank printed cell)")
    if not any(char.isdigit() for char in text):
        raise ValueError(f"unknown token {text!r} (allowed: {', '.join(TOKENS)})")
    raise ValueError(f"malformed cell {text!r}: expected a number, optionally marked **x**, __x__ or **__x__**")


def _check_header(path: Path, header: list[str]) -> None:
    """Raise InputError unless the header is `row`, then unique label/value slugs."""
    if not header or all(name.strip() == "" for name in header):
        raise InputError(f"{path}:1: empty header")
    if header[0] != "row":
        raise InputError(f"{path}:1: first header column must be 'row', got {header[0]!r}")
    seen = set()
    for name in header[1:]:
        if name == "":
            raise InputError(f"{path}:1: empty column name in header")
        if not (_LABEL.fullmatch(name) or _SLUG.fullmatch(name)):
            raise InputError(f"{path}:1: column name {name!r} is not a slug ([a-z0-9_], labels start with '_')")
        if name in seen:
            raise InputError(f"{path}:1: duplicate column {name!r}")
        seen.add(name)


def load_expected(path) -> ExpectedTable:
    """Read and validate an expected CSV; InputError names the file and line of any defect."""
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        _check_header(path, header)
        label_columns = [name for name in header[1:] if name.startswith("_")]
        value_columns = [name for name in header[1:] if not name.startswith("_")]
        table = ExpectedTable(path=path, rows=[], labels={}, columns=value_columns, cells={})
        for record in reader:
            line = reader.line_num
            if len(record) != len(header):
                raise InputError(f"{path}:{line}: {len(record)} columns, header has {len(header)}")
            row = record[0]
            if not _SLUG.fullmatch(row):
                raise InputError(f"{path}:{line}: row id {row!r} is not a slug ([a-z0-9_])")
            if row in table.labels:
                raise InputError(f"{path}:{line}: duplicate row {row!r}")
            table.rows.append(row)
            table.labels[row] = {}
            for name, text in zip(header[1:], record[1:]):
                if name in label_columns:
                    table.labels[row][name] = text
                    continue
                try:
                    table.cells[(row, name)] = parse_cell(text)
                except ValueError as error:
                    raise InputError(f"{path}:{line}: column {name!r}: {error}") from None
    if not table.rows:
        raise InputError(f"{path}: no data rows")
    return table
