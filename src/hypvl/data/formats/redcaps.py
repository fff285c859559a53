"""RedCaps-style webdataset shards, as MERU trains on (`meru/data/redcaps.py`).

Each sample is `<key>.jpg` (the image) and `<key>.json` holding at least `caption` (str) and
`subreddit` (str); the redcaps-downloader writes further fields (`image_id`, `url`, ...), which
are ignored. A shard source is a .tar file, a folder of them, or a list.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .common import field
from .shards import (
    image_member,
    iter_tar_samples,
    json_bytes,
    json_member,
    shard_paths,
    write_tar_samples,
)


@dataclass(frozen=True)
class RedCapsSample:
    """One image-caption pair: `image` holds the encoded JPEG bytes."""

    key: str
    image: bytes
    caption: str
    subreddit: str


def iter_redcaps(source) -> Iterator[RedCapsSample]:
    """Samples of every shard in `source`, in shard then member order."""
    for shard in shard_paths(source):
        for key, where, members in iter_tar_samples(shard):
            meta = json_member(members, "json", where)
            yield RedCapsSample(
                key=key,
                image=image_member(members, where),
                caption=field(meta, "caption", str, where),
                subreddit=field(meta, "subreddit", str, where),
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
