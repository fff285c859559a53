"""RedCaps-style webdataset shards, as MERU trains on (`meru/data/redcaps.py`).

Each sample is `<key>.jpg` (the image) and `<key>.json` holding at least `caption` (str) and
`subreddit` (str); the redcaps-downloader writes further fields (`image_id`, `url`, ...), which
are ignored. A shard source is a .tar file, a folder of them, or a list.
"""

from collections.abc import Iterable, Iterator
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .common import field
from .shards import (
    image_member,
    iter_corpus_samples,
    json_bytes,
    json_member,
    write_tar_samples,
)


@dataclass(frozen=True)
class RedCapsSample:
    """One image-caption pair: `image` holds the encoded JPEG bytes."""

    key: str
    image: bytes
    caption: str
    subreddit: str
    shard: Path | None = dataclasses.field(default=None, compare=False)  # the shard it was read from


def iter_redcaps(source) -> Iterator[RedCapsSample]:
    """Samples of every shard in `source`, in shard then member order."""
    for key, where, members in iter_corpus_samples(source):
        meta = json_member(members, "json", where)
        yield RedCapsSample(
            key=key,
            image=image_member(members, where),
            caption=field(meta, "caption", str, where),
            subreddit=field(meta, "subreddit", str, where),
            shard=where.file,
        )


def read_redcaps(source) -> list[RedCapsSample]:
    """All samples of `source` as a list."""
    return list(iter_redcaps(source))


def write_redcaps(path: Path, samples: Iterable[RedCapsSample]) -> None:
    """Write `samples` to one shard at `path` (`<key>.jpg` + `<key>.json`)."""
    write_tar_samples(
        path,
        (
            (s.key, {"jpg": s.image, "json": json_bytes({"caption": s.caption, "subreddit": s.subreddit})})
            for s in samples
        ),
    )
