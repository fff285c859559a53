"""HierarCaps (TAU-VAILab/hierarcaps): the test CSV and the training positives/negatives.

`data/hierarcaps_test.csv`: columns `id,captions,image_url`; `captions` is four levels, general to
specific, joined by " => " (the last is the original COCO val2014 caption); the images ship in the
repository as `assets/test_imgs/<basename of image_url>`, so the default image folder is
`<csv folder>/../assets/test_imgs`. Several rows may share an image.
`data/hierarcaps_train.csv.gz` (or an uncompressed .csv): columns `positive,negative`, each four
levels joined by " => " (a caption chain and its contrasting chain). Levels are split on "=>" and
stripped, as the upstream evaluator does. The train rows carry no images: upstream's data README retrieves them
"by cross-referencing captions in CC", i.e. the CC3M sample whose caption is the row's last positive level (the
original CC caption): `train_images`.
"""

import csv
import gzip
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from hypvl.io import atomic_write

from .cc3m import iter_cc3m
from .common import Where, read_csv_rows, resolve_image

LEVELS = 4
SEPARATOR = " => "


@dataclass(frozen=True)
class HierarCapsItem:
    """A test row: its id, its four caption levels (general to specific), image URL and local image."""

    id: int
    captions: tuple[str, str, str, str]
    image_url: str
    image: Path


@dataclass(frozen=True)
class HierarCapsPair:
    """A training row: four positive levels and four negative levels."""

    positive: tuple[str, str, str, str]
    negative: tuple[str, str, str, str]


def split_levels(text: str, column: str, where: Where) -> tuple[str, ...]:
    """The four non-empty levels of a " => "-joined chain."""
    levels = tuple(level.strip() for level in text.split("=>"))
    if len(levels) != LEVELS or not all(levels):
        raise where.error(
            f"'{column}' should be {LEVELS} non-empty levels joined by '{SEPARATOR}', got {len(levels)}: '{text}'"
        )
    return levels


def join_levels(levels: Sequence[str]) -> str:
    """Join four levels with " => " (levels must not contain '=>')."""
    if len(levels) != LEVELS or any("=>" in level or level != level.strip() or not level for level in levels):
        raise ValueError(f"need {LEVELS} stripped, non-empty levels without '=>', got {levels!r}")
    return SEPARATOR.join(levels)


def url_basename(url: str) -> str:
    """The file name at the end of an image URL ('' if none)."""
    return Path(urlparse(url).path).name


def default_image_root(csv_path: Path) -> Path:
    """`<csv folder>/../assets/test_imgs`, the upstream repository layout."""
    return Path(csv_path).parent.parent / "assets" / "test_imgs"


def read_hierarcaps_test(path: Path, image_root: Path | None = None, check_images: bool = True) -> list[HierarCapsItem]:
    """Rows of the test CSV in file order."""
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    items = []
    for where, row in read_csv_rows(path, ("id", "captions", "image_url")):
        if not row["id"].strip().isdigit():
            raise where.error(f"'id' should be an integer, got '{row['id']}'")
        name = url_basename(row["image_url"])
        if not name:
            raise where.error(f"'image_url' names no image file: '{row['image_url']}'")
        captions = split_levels(row["captions"], "captions", where)
        image = resolve_image(root, name, where, check_images)
        items.append(HierarCapsItem(int(row["id"]), captions, row["image_url"], image))
    return items


def read_hierarcaps_train(path: Path) -> list[HierarCapsPair]:
    """Rows of the training CSV (.csv or .csv.gz) in file order."""
    columns = ("positive", "negative")
    return [
        HierarCapsPair(*(split_levels(row[column], column, where) for column in columns))
        for where, row in read_csv_rows(Path(path), columns)
    ]


def train_images(pairs: Sequence[HierarCapsPair], cc3m) -> list[bytes | None]:
    """The encoded image of each train row: that of the first sample of the CC3M shards `cc3m` (a folder, a shard
    or a list, the `cc3m` format) whose stripped caption is the row's last positive level; None where none is."""
    wanted = {pair.positive[-1] for pair in pairs}
    found: dict[str, bytes] = {}
    for sample in iter_cc3m(cc3m):
        caption = sample.caption.strip()
        if caption in wanted and caption not in found:
            found[caption] = sample.image
    return [found.get(pair.positive[-1]) for pair in pairs]


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Write a headed CSV (gzip-compressed when `path` ends in .gz), atomically."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    data = buffer.getvalue().encode("utf-8")
    with atomic_write(path, mode="wb") as handle:
        handle.write(gzip.compress(data, mtime=0) if Path(path).suffix == ".gz" else data)


def write_hierarcaps_test(path: Path, items: Sequence[HierarCapsItem]) -> None:
    """Write the test CSV; each item's image file must be named like its URL's basename."""
    for item in items:
        if Path(item.image).name != url_basename(item.image_url):
            raise ValueError(f"image {item.image} is not named like the basename of {item.image_url}")
    rows = [(str(item.id), join_levels(item.captions), item.image_url) for item in items]
    _write_csv(path, ("id", "captions", "image_url"), rows)


def write_hierarcaps_train(path: Path, pairs: Sequence[HierarCapsPair]) -> None:
    """Write the training CSV (gzip when `path` ends in .gz)."""
    _write_csv(path, ("positive", "negative"), [(join_levels(p.positive), join_levels(p.negative)) for p in pairs])
