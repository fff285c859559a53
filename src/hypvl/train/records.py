"""Grounded shards as the training stream reads them: each shard checked whole and read by webdataset, each record
checked complete (`grounded_record`), its images decoded on first use."""

import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import webdataset as wds

from hypvl.data.formats.decoded import DecodedImage
from hypvl.data.formats.grounded import GroundedRecord, grounded_record, iter_grounded
from hypvl.data.formats.images import CorruptImage, decode_image
from hypvl.errors import InputError

from .syntax import SyntaxTargets


class LazyImage:
    """An image of a record: decoded on first use (from its bytes, or taken from a decoded twin); a decode failure
    is remembered and raised at every use."""

    __slots__ = ("data", "where", "decoded", "error")

    def __init__(self, data: bytes | DecodedImage, where: str):
        self.data, self.where, self.decoded, self.error = data, where, None, None

    def get(self):
        if self.decoded is None and self.error is None:
            try:
                data = self.data
                self.decoded = data.get() if isinstance(data, DecodedImage) else decode_image(data, self.where)
            except CorruptImage as exc:
                self.error = exc
            self.data = None  # keep the pixels (or the error), not the encoded bytes
        if self.error is not None:
            raise self.error
        return self.decoded


@dataclass
class Sample:
    """One grounded record as the stream uses it: images (decoded lazily), its captions with their tokens (the
    parsed one first; several where each access draws one), box crops and phrase tokens, the subreddit and the syntax
    targets where the run needs them."""

    image: LazyImage
    captions: list[tuple[str, torch.Tensor]]
    boxes: list[tuple[LazyImage, torch.Tensor]]
    subreddit: str | None = None
    syntax: SyntaxTargets | None = None


def read_shard(path: Path) -> Iterator[GroundedRecord]:
    """The records of one grounded shard, read by webdataset; a truncated or unreadable shard is an InputError."""
    _check_ends(path)
    pipeline = wds.DataPipeline(wds.SimpleShardList([str(path)]), wds.tarfile_to_samples(handler=wds.reraise_exception))
    try:
        for sample in pipeline:
            yield grounded_record(path, sample["__key__"],
                                  {name: data for name, data in sample.items() if not name.startswith("__")})
    except InputError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:  # webdataset's and tarfile's read errors
        raise InputError(f"{path}: truncated or corrupt tar shard ({type(exc).__name__}: {exc})") from None


def _check_ends(path: Path) -> None:
    """A tar archive ends with two zero blocks; one cut at a member boundary does not (webdataset's reader would
    stop there silently). `hypvl data check` validates shards fully."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - 2 * tarfile.BLOCKSIZE))
            tail = handle.read()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the shard ({exc.strerror})") from None
    if len(tail) < 2 * tarfile.BLOCKSIZE or tail.count(0) != len(tail):
        raise InputError(f"{path}: truncated tar shard (no end-of-archive blocks)")


def unparsed(shard, key: str) -> InputError:
    return InputError(f"{shard}: sample {key!r} has no dependency parse (child.parse.json), which syntax-preserving "
                      "MERU trains on: ground the corpus with `hypvl ground`")


def check_parsed(shards: list[Path]) -> None:
    """Refuse, before training, shards whose first sample has no parse (e.g. HyCoCLIP's released GRIT shards)."""
    for shard in shards:
        first = next(iter_grounded(shard), None)
        if first is not None and first.parse is None:
            raise unparsed(shard, first.key)
