"""YFCC15M: the CLIP subset of YFCC100M (Radford et al. 2021), as MERU Table 5's first CLIP baselines train on it.

A corpus folder holds the files as they are distributed:
- `yfcc100m_subset_data.tsv`: OpenAI's subset list, one `line number<TAB>photo id<TAB>photo hash` row per image
  (no header), "the first three columns in the dataset's metadata TSV file";
- `yfcc100m_dataset`: the YFCC100M metadata, one tab-separated row of 25 fields per photo or video (line number,
  photo id, photo hash, user NSID, user nickname, date taken, date uploaded, capture device, title, description,
  user tags, machine tags, longitude, latitude, accuracy, page URL, download URL, licence name, licence URL,
  server id, farm id, secret, original secret, original extension, marker: 0 photo / 1 video); title and
  description are URL-encoded (`+` for a space). It may be the whole 100M file or only the subset's rows;
- `images/<hash[:3]>/<hash[3:6]>/<hash>.jpg`: the photos, laid out by hash as the Multimedia Commons bucket is.

A sample's captions are its cleaned title and description, those that hold text (cleaning as SLIP and CLIP:
URL-decode, drop HTML tags and links, collapse white space): SLIP, whose recipe MERU's YFCC rows follow, draws one
of the two at random at every access (SLIP datasets.py `np.random.choice([title, desc])`), and the training stream
does the same (`hypvl.train.data`). `caption`, the first of them, is the one grounding parses and boxes.

About 1% of the subset list has no photo upstream (SLIP make_dataset.py kept 14,689,580 of its 14.83M rows); a
reader given `skip` passes over a row without its image file or without any text, telling `skip` why (grounding
counts them against `grounding.max_skipped_fraction`); without it such a row is an error.
"""

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote_plus, unquote_plus

from hypvl.errors import InputError
from hypvl.io import atomic_write

from .common import Where, require_file

SUBSET = "yfcc100m_subset_data.tsv"
METADATA = "yfcc100m_dataset"
IMAGES = "images"
FIELDS = ("line_number", "photo_id", "photo_hash", "user_nsid", "user_nickname", "date_taken", "date_uploaded",
          "capture_device", "title", "description", "user_tags", "machine_tags", "longitude", "latitude",
          "accuracy", "page_url", "download_url", "license_name", "license_url", "server_id", "farm_id", "secret",
          "secret_original", "extension_original", "marker")
_COLUMN = {name: index for index, name in enumerate(FIELDS)}
_HASH = re.compile(r"[0-9a-f]{6,}")
_MARKUP = re.compile(r"<[^>]*>|https?://\S+|www\.\S+")


@dataclass(frozen=True)
class YFCCSample:
    """One photo of the subset: its metadata line number, photo id (the key), hash, raw title and description
    (decoded, uncleaned) and the JPEG bytes."""

    line_number: int
    key: str
    photo_hash: str
    title: str
    description: str
    image: bytes

    @property
    def captions(self) -> list[str]:
        """The cleaned title and description, those holding text, without repeats (title first)."""
        return list(dict.fromkeys(text for text in (clean_text(self.title), clean_text(self.description)) if text))

    @property
    def caption(self) -> str:
        """The cleaned title, or the cleaned description when the title is empty."""
        return clean_text(self.title) or clean_text(self.description)


def clean_text(text: str) -> str:
    """`text` without HTML tags and links, white space collapsed."""
    return " ".join(_MARKUP.sub(" ", text).split())


def image_path(folder: Path, photo_hash: str) -> Path:
    """Where the photo with `photo_hash` lies under a corpus folder."""
    return Path(folder) / IMAGES / photo_hash[:3] / photo_hash[3:6] / f"{photo_hash}.jpg"


def _tsv_rows(path: Path, width: int) -> Iterator[tuple[Where, list[str]]]:
    """(where, fields) of every line of a tab-separated file, each checked to hold `width` fields."""
    with open(require_file(path), encoding="utf-8", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            where = Where(path, f"line {number}")
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != width:
                raise where.error(f"has {len(fields)} tab-separated fields, expected {width}")
            yield where, fields


def _row_ids(where: Where, line_number: str, photo_id: str, photo_hash: str) -> tuple[int, str, str]:
    """The checked (line number, photo id, hash) of a subset or metadata row."""
    if not line_number.isdigit() or not photo_id.isdigit():
        raise where.error(f"line number {line_number!r} and photo id {photo_id!r} must be decimal integers")
    if not _HASH.fullmatch(photo_hash):
        raise where.error(f"photo hash {photo_hash!r} is not a lower-case hex digest")
    return int(line_number), photo_id, photo_hash


def read_subset(path: Path) -> dict[str, tuple[int, str]]:
    """photo id -> (metadata line number, hash) of every row of a `yfcc100m_subset_data.tsv`."""
    subset = {}
    for where, fields in _tsv_rows(path, 3):
        line_number, photo_id, photo_hash = _row_ids(where, *fields)
        if photo_id in subset:
            raise where.error(f"photo id {photo_id} is listed twice")
        subset[photo_id] = (line_number, photo_hash)
    if not subset:
        raise InputError(f"{path}: empty subset list")
    return subset


def iter_yfcc(folder, skip: Callable[[str, str], None] | None = None) -> Iterator[YFCCSample]:
    """The subset's photos in metadata order; every subset row must have its metadata row, a photo marker and the
    same line number and hash. A row without text or without its image file is an error, or, given `skip`, passed
    over with `skip(reason, message)`, reason "no_text" or "no_image"."""
    folder = Path(folder)
    subset = read_subset(folder / SUBSET)
    seen = set()
    for where, fields in _tsv_rows(folder / METADATA, len(FIELDS)):
        photo_id = fields[_COLUMN["photo_id"]]
        if photo_id not in subset:
            continue
        line_number, _, photo_hash = _row_ids(where, *fields[:3])
        if (line_number, photo_hash) != subset[photo_id]:
            raise where.error(f"photo {photo_id}: line number and hash ({line_number}, {photo_hash}) differ from "
                              f"the subset list's {subset[photo_id]}")
        if fields[_COLUMN["marker"]] != "0":
            raise where.error(f"photo {photo_id}: marker {fields[_COLUMN['marker']]!r}, the subset holds photos (0)")
        title, description = unquote_plus(fields[_COLUMN["title"]]), unquote_plus(fields[_COLUMN["description"]])
        seen.add(photo_id)
        path = image_path(folder, photo_hash)
        problem = (("no_text", f"photo {photo_id}: neither title nor description holds text")
                   if not (clean_text(title) or clean_text(description)) else
                   ("no_image", f"photo {photo_id}: image file not found: {path}") if not path.is_file() else None)
        if problem is not None:
            if skip is None:
                raise where.error(problem[1])
            skip(problem[0], str(where.error(problem[1])))
            continue
        yield YFCCSample(line_number, photo_id, photo_hash, title, description, path.read_bytes())
    missing = sorted(set(subset) - seen)
    if missing:
        raise InputError(f"{folder / METADATA}: no metadata row for {len(missing)} photo(s) of {folder / SUBSET}, "
                         f"e.g. {missing[:3]}")


def read_yfcc(folder) -> list[YFCCSample]:
    """All samples of the corpus folder as a list."""
    return list(iter_yfcc(folder))


def write_yfcc(folder: Path, samples: Iterable[YFCCSample]) -> None:
    """Write `samples` as a corpus folder: the subset list, the metadata of exactly these photos (fields the
    smoke world has no value for left empty; title and description URL-encoded) and the image files, but for a
    sample with empty image bytes (a photo missing upstream)."""
    folder = Path(folder)
    samples = list(samples)
    for sample in samples:
        if not sample.image:
            continue
        path = image_path(folder, sample.photo_hash)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as handle:
            handle.write(sample.image)
    with atomic_write(folder / SUBSET, "w", encoding="utf-8", newline="\n") as handle:
        for sample in samples:
            handle.write(f"{sample.line_number}\t{sample.key}\t{sample.photo_hash}\n")
    with atomic_write(folder / METADATA, "w", encoding="utf-8", newline="\n") as handle:
        for sample in samples:
            row = dict.fromkeys(FIELDS, "")
            row.update(line_number=str(sample.line_number), photo_id=sample.key, photo_hash=sample.photo_hash,
                       title=quote_plus(sample.title), description=quote_plus(sample.description),
                       extension_original="jpg", marker="0")
            handle.write("\t".join(row[name] for name in FIELDS) + "\n")
