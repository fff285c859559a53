"""Shared checks for the format readers: every failure names the file, the record and the problem."""

import csv
import gzip
import io
import json
import math
import posixpath
from dataclasses import dataclass
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import write_json as strict_json

_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object"}


@dataclass(frozen=True)
class Where:
    """A place in an input file: `file` and `record` (an index, a key or 'line N')."""

    file: Path
    record: object = None

    def error(self, problem: str) -> InputError:
        """An InputError reading '<file>: record <record>: <problem>'."""
        if self.record is None:
            return InputError(f"{self.file}: {problem}")
        return InputError(f"{self.file}: record {self.record}: {problem}")

    def at(self, record) -> "Where":
        """The same file, another record."""
        return Where(self.file, record)


def type_name(value) -> str:
    """A readable name for the type of a parsed JSON/YAML value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return _KIND_NAMES.get(type(value), type(value).__name__)


def check_kind(value, kind: type, what: str, where: Where):
    """`value` if it is of JSON kind `kind` (bools are never numbers; float accepts int, finite only)."""
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise where.error(f"{what} should be {_KIND_NAMES[kind]}, got {type_name(value)}")
    return float(value) if kind is float else value


def field(obj, name: str, kind: type, where: Where):
    """`obj[name]` checked to be of JSON kind `kind`; a missing field or a non-object is an error."""
    if not isinstance(obj, dict):
        raise where.error(f"should be an object with field '{name}', got {type_name(obj)}")
    if name not in obj:
        raise where.error(f"missing field '{name}'")
    return check_kind(obj[name], kind, f"field '{name}'", where)


def string_list(value, what: str, where: Where, nonempty: bool = True) -> tuple[str, ...]:
    """`value` checked to be a list of strings (non-empty unless `nonempty` is False)."""
    check_kind(value, list, what, where)
    if nonempty and not value:
        raise where.error(f"{what} is empty")
    for index, item in enumerate(value):
        check_kind(item, str, f"{what}[{index}]", where)
    return tuple(value)


def require_file(path: Path, what: str = "file") -> Path:
    """`path` if it is an existing file, else an InputError naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {what} not found")
    return path


def require_image(path: Path, where: Where) -> Path:
    """`path` if the image file exists, else an error naming the image, the file and the record."""
    if not Path(path).is_file():
        raise where.error(f"image file not found: {path}")
    return Path(path)


def escapes_root(relative: str) -> bool:
    """True where the path `relative`, meant to lie under some root, is absolute or climbs out of it with
    `..` (judged on the name alone: a symlinked image folder under the root stays allowed)."""
    normal = posixpath.normpath(str(relative).replace("\\", "/"))
    return posixpath.isabs(normal) or normal == ".." or normal.startswith("../")


def resolve_image(root: Path, relative: str, where: Where, check_images: bool) -> Path:
    """`root / relative`, checked to exist when `check_images`; a path escaping `root` is an error."""
    if escapes_root(relative):
        raise where.error(f"image path {relative!r} points outside the image root {root}")
    path = Path(root) / relative
    return require_image(path, where) if check_images else path


def load_json(path: Path):
    """Parse a JSON file; a missing, truncated or malformed file is an InputError naming it."""
    path = require_file(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: malformed or truncated JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None


def read_text(path: Path) -> str:
    """The UTF-8 text of a file (transparently gunzipped for `.gz`); errors name the file."""
    path = require_file(path)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
                return handle.read()
        return path.read_text(encoding="utf-8")
    except (EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{path}: truncated or corrupt gzip stream ({exc})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None


def read_csv_rows(path: Path, required: tuple[str, ...]) -> list[tuple[Where, dict[str, str]]]:
    """Rows of a headed CSV file as (where, row) with `where.record` = 'line N'; the header must hold `required`."""
    path = Path(path)
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        for values in reader:
            rows.append((Where(path, f"line {reader.line_num}"), values))
    except csv.Error as exc:
        raise Where(path, f"line {reader.line_num}").error(f"malformed CSV ({exc}); truncated file?") from None
    if not rows:
        raise Where(path).error("empty file, expected a header row")
    header = rows[0][1]
    missing = [name for name in required if name not in header]
    if missing:
        raise rows[0][0].error(f"header {header} lacks column(s) {missing}")
    parsed = []
    for where, values in rows[1:]:
        if len(values) != len(header):
            raise where.error(f"has {len(values)} fields, header has {len(header)}; truncated line?")
        parsed.append((where, dict(zip(header, values))))
    return parsed


def write_json(path: Path, value) -> None:
    """Write `value` as strict UTF-8 JSON, atomically."""
    strict_json(path, value, ensure_ascii=False)


@dataclass(frozen=True)
class CaptionedImage:
    """A retrieval-set image (its resolved path) with all its reference captions, in file order."""

    image: Path
    captions: tuple[str, ...]


def image_size(path: Path) -> tuple[int, int]:
    """(width, height) of an image file, read from its header."""
    from PIL import Image  # only here: planning reads this module (data.manifest) and needs no Pillow

    from .images import oversized

    try:
        with Image.open(path) as image:
            return image.size
    except Image.DecompressionBombError as exc:
        raise oversized(exc, str(path)) from None
