"""CC3M-style image-caption shards: the img2dataset webdataset layout commonly used for CC3M.

Conceptual Captions is published as a TSV of caption<TAB>url (`Train_GCC-training.tsv`); the common
local copy is what `img2dataset --output_format webdataset` makes of it: shards `00000.tar`, ...
whose samples are `<key>.jpg` (the image) and `<key>.txt` (the caption, UTF-8), plus a `<key>.json`
of download metadata that is ignored here (as are the `.parquet` and `_stats.json` beside the shards).
"""

from collections.abc import Iterable, Iterator
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .shards import (
    image_member,
    iter_corpus_samples,
    text_member,
    write_tar_samples,
)


@dataclass(frozen=True)
class CC3MSample:
    """One image-caption pair: `image` holds the encoded JPEG bytes."""

    key: str
    image: bytes
    caption: str
    shard: Path | None = dataclasses.field(default=None, compare=False)  # the shard it was read from


def iter_cc3m(source) -> Iterator[CC3MSample]:
    """Samples of every shard in `source` (a .tar, a folder of them, or a list)."""
    for key, where, members in iter_corpus_samples(source):
        caption = text_member(members, "txt", where)
        if not caption.strip():
            raise where.error("caption '.txt' is empty")
        yield CC3MSample(key, image_member(members, where), caption, where.file)


def read_cc3m(source) -> list[CC3MSample]:
    """All samples of `source` as a list."""
    return list(iter_cc3m(source))


def write_cc3m(path: Path, samples: Iterable[CC3MSample]) -> None:
    """Write `samples` to one shard at `path` (`<key>.jpg` + `<key>.txt`)."""
    write_tar_samples(path, ((s.key, {"jpg": s.image, "txt": s.caption.encode("utf-8")}) for s in samples))
