"""Webdataset tar shards: samples are runs of adjacent members `<key>.<ext>` sharing a key.

The key is the member path up to the first dot of its base name and the extension is the rest
(webdataset's convention), so `a/0001.child.jpg` is key `a/0001`, extension `child.jpg`. A key never holds a `..`
part or starts at `/` (it is copied into the names of the shards written from it), and a key names one sample of a
corpus: a key in two shards is an error naming both.
Readers verify the end-of-archive block, so a truncated shard is an error, never a short read.
A reader may leave members unread (`defer`) and keep only where their bytes lie (`MemberSpan`), to index a split
too large to hold in memory and read each image when it is needed. That index is this walk's own (tarfile gives each
member's offset): webdataset streams shards in order, and its indexed reader (wids) wants each shard's sample count
up front and parses the tar a second time, without the checks above.
"""

import io
import json
import tarfile
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import atomic_write

from .common import Where

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp")
_BLOCK = tarfile.BLOCKSIZE


def shard_paths(source) -> list[Path]:
    """Shard files named by `source`: a .tar file, a folder (its *.tar, sorted) or a list of either."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            shards = sorted(path.glob("*.tar"))
            if not shards:
                raise InputError(f"{path}: folder holds no .tar shards")
            return shards
        if not path.is_file():
            raise InputError(f"{path}: shard not found")
        return [path]
    return [shard for item in source for shard in shard_paths(item)]


@dataclass(frozen=True)
class MemberSpan:
    """Where a member's bytes lie in its shard: `size` bytes from byte `offset` of the shard `where.file`."""

    where: Where
    offset: int
    size: int

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        """The member's bytes; a shard that has shrunk or gone since it was indexed is an error naming it and the
        record."""
        try:
            with open(self.where.file, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(self.size)
        except FileNotFoundError:
            raise self.where.error("the shard has gone since it was indexed (deleted while the step ran?)") from None
        if len(data) != self.size:
            raise self.where.error("the shard has changed since it was indexed (the member ends past its end)")
        return data


def unsafe_key(key: str) -> bool:
    """True for a key that would leave a folder when used as a path (a `..` part, or an absolute path)."""
    return key.startswith("/") or ".." in key.split("/")


def split_member_name(name: str) -> tuple[str, str]:
    """(key, extension) of a member name; names without an extension have extension ''."""
    folder, _, base = name.rpartition("/")
    stem, dot, extension = base.partition(".")
    key = f"{folder}/{stem}" if folder else stem
    return key, extension if dot else ""


def iter_tar_samples(path: Path, defer: Collection[str] = ()) -> Iterator[tuple[str, Where, dict]]:
    """Samples of one shard as (key, where, {extension: bytes}); `where.record` is 'key <key>'. Members whose
    extension is in `defer` are not read: their value is a MemberSpan."""
    path = Path(path)
    seen: set[str] = set()
    key, members = None, {}
    try:
        with tarfile.open(path, mode="r:") as archive:
            for info in archive:
                if not info.isfile():
                    continue
                member_key, extension = split_member_name(info.name)
                where = Where(path, f"key {member_key}")
                if not extension:
                    raise where.error(f"member '{info.name}' has no extension")
                if unsafe_key(member_key):
                    raise where.error(f"member '{info.name}' has a key holding '..' or starting at '/': refused")
                if member_key != key:
                    if key is not None:
                        yield key, Where(path, f"key {key}"), members
                    if member_key in seen:
                        raise where.error("members of this sample are not adjacent in the shard")
                    seen.add(member_key)
                    key, members = member_key, {}
                if extension in members:
                    raise where.error(f"duplicate member '{info.name}'")
                if extension in defer:
                    if info.issparse():
                        raise where.error(f"member '{info.name}' is a sparse file")
                    members[extension] = MemberSpan(where, info.offset_data, info.size)
                else:
                    members[extension] = archive.extractfile(info).read()
            end = archive.offset
    except (tarfile.TarError, EOFError, OSError) as exc:
        last = f" after key {key}" if key is not None else ""
        raise InputError(f"{path}: truncated or corrupt tar shard{last} ({exc})") from None
    with open(path, "rb") as handle:
        handle.seek(end)
        marker = handle.read(_BLOCK)
    if len(marker) < _BLOCK or marker.count(0) != _BLOCK:
        last = f"key {key}" if key is not None else "the start"
        raise InputError(f"{path}: truncated tar shard: no end-of-archive block after {last}")
    if key is not None:
        yield key, Where(path, f"key {key}"), members


def iter_corpus_samples(source) -> Iterator[tuple[str, Where, dict]]:
    """`iter_tar_samples` over every shard `source` names (`shard_paths`), in order; a key already read from an
    earlier shard is an InputError naming both shards. Keys are remembered by their hash (a set of ints: about 60
    bytes a sample); a repeated hash is confirmed by finding the key in the earlier shards."""
    shards = shard_paths(source)
    seen: set[int] = set()
    for index, shard in enumerate(shards):
        for key, where, members in iter_tar_samples(shard):
            if hash(key) in seen:
                earlier = next((s for s in shards[:index] if any(k == key for k, _, _ in iter_tar_samples(s))), None)
                if earlier is not None:
                    raise where.error(f"the same sample key is in {earlier}: a key names one sample of a corpus")
            seen.add(hash(key))
            yield key, where, members


def write_tar_samples(path: Path, samples: Iterable[tuple[str, dict[str, bytes]]]) -> None:
    """Write (key, {extension: bytes}) samples to one shard, atomically, with fixed metadata (byte-identical reruns)."""
    keys: set[str] = set()
    with (
        atomic_write(path, mode="wb") as handle,
        tarfile.open(fileobj=handle, mode="w", format=tarfile.USTAR_FORMAT) as archive,
    ):
        for key, members in samples:
            if not key or "." in key.rpartition("/")[2] or key in keys or unsafe_key(key):
                raise InputError(f"{path}: shard key {key!r} is empty, holds a dot or '..', starts at '/' or repeats")
            keys.add(key)
            for extension, data in members.items():
                info = tarfile.TarInfo(f"{key}.{extension}")
                info.size = len(data)
                info.mode = 0o644
                archive.addfile(info, io.BytesIO(data))


def member(members: dict[str, bytes], extension: str, where: Where) -> bytes:
    """The bytes of member `<key>.<extension>`, else an error naming shard and key."""
    if extension not in members:
        raise where.error(f"missing member '.{extension}' (has {sorted(members)})")
    return members[extension]


def image_member(members: dict[str, bytes], where: Where) -> bytes:
    """The encoded image of a sample: exactly one of the IMAGE_EXTENSIONS members."""
    found = [extension for extension in IMAGE_EXTENSIONS if extension in members]
    if not found:
        wanted = "/".join(IMAGE_EXTENSIONS)
        raise where.error(f"missing image (no member with extension {wanted}; has {sorted(members)})")
    if len(found) > 1:
        raise where.error(f"several images {found}; expected one")
    data = members[found[0]]
    if not data:
        raise where.error(f"image member '.{found[0]}' is empty")
    return data


def text_member(members: dict[str, bytes], extension: str, where: Where) -> str:
    """A UTF-8 text member, decoded."""
    try:
        return member(members, extension, where).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise where.error(f"member '.{extension}' is not UTF-8 ({exc.reason})") from None


def json_member(members: dict[str, bytes], extension: str, where: Where):
    """A JSON member, parsed."""
    text = text_member(members, extension, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise where.error(f"member '.{extension}' is malformed JSON ({exc.msg} at column {exc.colno})") from None


def json_bytes(value) -> bytes:
    """Compact UTF-8 JSON bytes for a `.json` member."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
