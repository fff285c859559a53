"""HyCoCLIP's processed grounded shards: a whole image and caption plus box crops and box texts.

Each sample of a webdataset tar holds ``<key>.child.jpg``, ``<key>.child.txt``,
``<key>.numparents.txt`` and, for i < numparents, ``<key>.parentNNN.jpg`` / ``<key>.parentNNN.txt``
(the box crop, border-padded to a square, and its noun phrase), as written by HyCoCLIP's
``utils/prepare_GRIT_webdataset.py``. Boxes are "parents": more general than the whole ("child").
Our grounding step adds an optional ``<key>.child.parse.json``: the caption's dependency parse
(`hypvl.data.formats.parses`), for the syntax-preserving paper; readers that do not know
it ignore it, and shards without it read with ``parse = None``. Samples grounded from RedCaps also keep their
post's subreddit as ``<key>.subreddit.txt`` (MERU's text augmentation prefixes it to the caption);
without it ``subreddit = None``. A sample with several captions to draw from at each access (a YFCC15M photo's
title and description, as SLIP trains) lists them all in ``<key>.captions.json``, ``child.txt``'s first;
without it ``captions = []`` (the caption alone).
"""

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import json_text

from .parses import validate_parse
from .shards import iter_tar_samples, shard_paths, write_tar_samples


@dataclass
class GroundedRecord:
    """One grounded sample as stored: encoded image bytes, texts, and optionally the caption's parse."""

    key: str
    image: bytes
    caption: str
    boxes: list[tuple[bytes, str]] = field(default_factory=list)
    source: str = ""
    parse: dict | None = None
    subreddit: str | None = None
    captions: list[str] = field(default_factory=list)  # several to draw from (`caption` first), or none

    def where(self, part: str = "child.jpg") -> str:
        return f"{self.source}: sample {self.key!r} ({part})"


def write_grounded_shards(records: Iterable[GroundedRecord], out_dir: Path, shard_size: int = 1000,
                          prefix: str = "grounded", first: int = 0) -> list[Path]:
    """Write records into ``<prefix>-NNNNNN.tar`` shards of `shard_size` samples, numbered from `first`; returns the
    paths."""
    out_dir = Path(out_dir)
    paths: list[Path] = []
    batch: list[GroundedRecord] = []
    for record in records:
        batch.append(record)
        if len(batch) == shard_size:
            paths.append(_write_shard(batch, out_dir / f"{prefix}-{first + len(paths):06d}.tar"))
            batch = []
    if batch:
        paths.append(_write_shard(batch, out_dir / f"{prefix}-{first + len(paths):06d}.tar"))
    return paths


def _write_shard(records: list[GroundedRecord], path: Path) -> Path:
    write_tar_samples(path, ((rec.key, _members(rec)) for rec in records))
    return path


def _members(rec: GroundedRecord) -> dict[str, bytes]:
    members = {"child.jpg": rec.image, "child.txt": rec.caption.encode(),
               "numparents.txt": str(len(rec.boxes)).encode()}
    for i, (crop, text) in enumerate(rec.boxes):
        members[f"parent{i:03d}.jpg"] = crop
        members[f"parent{i:03d}.txt"] = text.encode()
    if rec.parse is not None:
        members["child.parse.json"] = json_text(rec.parse, rec.where("child.parse.json")).encode()
    if rec.subreddit is not None:
        members["subreddit.txt"] = rec.subreddit.encode()
    if rec.captions:
        members["captions.json"] = json_text(rec.captions, rec.where("captions.json")).encode()
    return members


def iter_grounded(source) -> Iterator[GroundedRecord]:
    """Stream records from grounded shards (a shard, a folder of shards, or a list of either), checking
    each sample is complete; a truncated shard is an error naming it."""
    for path in shard_paths(source):
        for key, _, parts in iter_tar_samples(path):
            yield grounded_record(path, key, parts)


def grounded_record(path: Path, key: str, parts: dict[str, bytes]) -> GroundedRecord:
    """The record of sample `key` of shard `path` from its members ({extension: bytes}), checked complete."""
    where = f"{path}: sample {key!r}"
    for required in ("child.jpg", "child.txt", "numparents.txt"):
        if required not in parts:
            raise InputError(f"{where}: missing {required}")
    try:
        count = int(parts["numparents.txt"].decode().strip())
    except ValueError as exc:
        raise InputError(f"{where}: numparents.txt is not an integer") from exc
    if not 0 <= count <= len(parts):  # each box is two members of the sample
        raise InputError(f"{where}: numparents.txt says {count} boxes, the sample holds {len(parts)} members")
    boxes = []
    for i in range(count):
        img, txt = parts.get(f"parent{i:03d}.jpg"), parts.get(f"parent{i:03d}.txt")
        if img is None or txt is None:
            raise InputError(f"{where}: numparents.txt says {count} boxes but parent{i:03d} is missing")
        boxes.append((img, txt.decode().strip()))
    parse = None
    if "child.parse.json" in parts:
        try:
            parse = json.loads(parts["child.parse.json"].decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{where}: child.parse.json is not JSON ({exc})") from exc
        if not isinstance(parse, dict):
            raise InputError(f"{where}: child.parse.json should be an object")
        validate_parse(parse, f"{where} (child.parse.json)")
    subreddit = parts["subreddit.txt"].decode().strip() if "subreddit.txt" in parts else None
    caption = parts["child.txt"].decode().strip()
    captions = _captions(parts["captions.json"], caption, where) if "captions.json" in parts else []
    return GroundedRecord(key, parts["child.jpg"], caption, boxes, str(path), parse, subreddit, captions)


def _captions(data: bytes, caption: str, where: str) -> list[str]:
    """The checked list of a sample's `captions.json`: texts, child.txt's first."""
    try:
        captions = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{where}: captions.json is not JSON ({exc})") from exc
    if not (isinstance(captions, list) and captions and all(isinstance(c, str) and c.strip() for c in captions)
            and captions[0] == caption):
        raise InputError(f"{where}: captions.json should list the sample's texts, child.txt's caption first")
    return captions
