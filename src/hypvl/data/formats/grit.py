"""GRIT-style webdataset shards (img2dataset output of `zzliang/GRIT`), as HyCoCLIP's GRIT preparation reads.

Each sample is `<key>.jpg` and `<key>.json` with `caption` (str), `noun_chunks` and `ref_exps`:
lists of `[start, end, x1, y1, x2, y2, score]`, where `caption[start:end]` is the phrase,
(x1, y1, x2, y2) its box normalised by image width/height to [0, 1], and `score` the grounding
confidence in [0, 1]. Other GRIT fields (`url`, `width`, `clip_similarity_vitb32`, ...) are ignored.
"""

from collections.abc import Iterable, Iterator
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .common import Where, check_kind, field
from .shards import (
    image_member,
    iter_corpus_samples,
    json_bytes,
    json_member,
    write_tar_samples,
)


class GroundedSpan(NamedTuple):
    """A caption span `caption[start:end]` with its normalised box (x1, y1, x2, y2) and score."""

    start: int
    end: int
    x1: float
    y1: float
    x2: float
    y2: float
    score: float


@dataclass(frozen=True)
class GritSample:
    """One grounded image-caption pair: `image` holds the encoded JPEG bytes."""

    key: str
    image: bytes
    caption: str
    noun_chunks: tuple[GroundedSpan, ...]
    ref_exps: tuple[GroundedSpan, ...]
    shard: Path | None = dataclasses.field(default=None, compare=False)  # the shard it was read from


def parse_span(entry, caption: str, what: str, where: Where) -> GroundedSpan:
    """Check one `[start, end, x1, y1, x2, y2, score]` entry against its caption."""
    check_kind(entry, list, what, where)
    if len(entry) != 7:
        raise where.error(f"{what} should have 7 numbers [start, end, x1, y1, x2, y2, score], got {len(entry)}")
    values = [check_kind(value, float, f"{what}[{index}]", where) for index, value in enumerate(entry)]
    start, end, x1, y1, x2, y2, score = values
    if start != int(start) or end != int(end):
        raise where.error(f"{what}: start/end {entry[:2]} are not whole character offsets")
    if not 0 <= start < end <= len(caption):
        raise where.error(f"{what}: needs 0 <= start < end <= len(caption) = {len(caption)}, got {entry[:2]}")
    if not all(0.0 <= v <= 1.0 for v in (x1, y1, x2, y2, score)):
        raise where.error(f"{what}: box and score must lie in [0, 1], got {entry[2:]}")
    if x1 > x2 or y1 > y2:
        raise where.error(f"{what}: box corners out of order (x1 <= x2, y1 <= y2), got {entry[2:6]}")
    return GroundedSpan(int(start), int(end), x1, y1, x2, y2, score)


def iter_grit(source) -> Iterator[GritSample]:
    """Samples of every shard in `source` (a .tar, a folder of them, or a list)."""
    for key, where, members in iter_corpus_samples(source):
        meta = json_member(members, "json", where)
        caption = field(meta, "caption", str, where)
        spans = {
            name: tuple(
                parse_span(entry, caption, f"{name}[{index}]", where)
                for index, entry in enumerate(field(meta, name, list, where))
            )
            for name in ("noun_chunks", "ref_exps")
        }
        yield GritSample(key, image_member(members, where), caption, spans["noun_chunks"], spans["ref_exps"],
                         where.file)


def read_grit(source) -> list[GritSample]:
    """All samples of `source` as a list."""
    return list(iter_grit(source))


def write_grit(path: Path, samples: Iterable[GritSample]) -> None:
    """Write `samples` to one shard at `path` (`<key>.jpg` + `<key>.json`)."""

    def meta(sample: GritSample) -> dict:
        return {
            "caption": sample.caption,
            "noun_chunks": [list(span) for span in sample.noun_chunks],
            "ref_exps": [list(span) for span in sample.ref_exps],
        }

    write_tar_samples(path, ((s.key, {"jpg": s.image, "json": json_bytes(meta(s))}) for s in samples))
