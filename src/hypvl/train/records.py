"""Grounded shards as the training stream reads them: each shard checked whole and read by webdataset, each record
checked complete (`grounded_record`) and made a `Sample`, its images decoded on first use."""

import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import webdataset as wds
from PIL import Image

from hypvl.data.formats.decoded import DecodedImage, read_twin
from hypvl.data.formats.grounded import GroundedRecord, grounded_record, iter_grounded
from hypvl.data.formats.images import CorruptImage, decode_image
from hypvl.errors import InputError

from .syntax import SyntaxTargets, syntax_targets


class LazyImage:
    """An image of a record: decoded on first use (from its bytes, or taken from a decoded twin), then given its
    `view` where there is one (e.g. HyCoCLIP's border padding); a decode failure is remembered and raised at every
    use."""

    __slots__ = ("data", "where", "decoded", "error", "view")

    def __init__(self, data: bytes | DecodedImage, where: str, view: Callable[[Image.Image], Image.Image] | None = None):
        self.data, self.where, self.decoded, self.error, self.view = data, where, None, None, view

    def get(self):
        if self.decoded is None and self.error is None:
            try:
                data = self.data
                self.decoded = data.get() if isinstance(data, DecodedImage) else decode_image(data, self.where)
                if self.view is not None:
                    self.decoded = self.view(self.decoded)
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


class ShardSamples:
    """A reader's grounded shards as `Sample`s: tokenised (`tokenizer`), with syntax targets where `syntax`, the whole
    image given `view`; with `cache`, each shard kept after its first pass (read from its decoded twin where grounding
    wrote one) and each text tokenised once, else read again on every pass. `subreddits`: every record needs one."""

    def __init__(self, tokenizer, cache: bool, syntax: bool, subreddits: bool,
                 view: Callable[[Image.Image], Image.Image] | None = None):
        self.tokenizer, self.syntax, self.subreddits, self.view = tokenizer, syntax, subreddits, view
        self._cache: dict[Path, list[Sample]] | None = {} if cache else None
        self._tokens: dict[str, torch.Tensor] = {}  # text -> token ids, kept only with the cache

    def of(self, shard: Path) -> list[Sample]:
        """The samples of one shard."""
        if self._cache is None:
            return [self._sample(record) for record in read_shard(shard)]
        if shard not in self._cache:
            twin = read_twin(shard)
            self._cache[shard] = ([self._sample(record, images) for record, images in twin] if twin is not None
                                  else [self._sample(record) for record in read_shard(shard)])
        return self._cache[shard]

    def tokenised(self, texts: list[str]) -> list[torch.Tensor]:
        if self._cache is None:
            return list(self.tokenizer(texts))
        new = [text for text in dict.fromkeys(texts) if text not in self._tokens]
        if new:
            self._tokens.update(zip(new, self.tokenizer(new)))
        return [self._tokens[text] for text in texts]

    def _sample(self, record: GroundedRecord, decoded: list[DecodedImage] | None = None) -> Sample:
        """A record as the stream uses it; `decoded`: its images (whole, then crops) from the shard's twin."""
        images = decoded or [record.image, *(crop for crop, _ in record.boxes)]
        if self.subreddits and record.subreddit is None:
            raise InputError(f"{record.where('subreddit.txt')}: no subreddit, which MERU's RedCaps caption "
                             "augmentation prefixes: ground the corpus again with `hypvl ground`")
        captions = record.captions or [record.caption]
        tokens = self.tokenised([*captions, *(phrase for _, phrase in record.boxes)])
        boxes = [(LazyImage(crop, record.where(f"parent{i:03d}.jpg")), phrase_tokens)
                 for i, (crop, phrase_tokens) in enumerate(zip(images[1:], tokens[len(captions):]))]
        syntax = None
        if self.syntax:
            if record.parse is None:
                raise unparsed(record.source, record.key)
            positions = self.tokenizer.word_positions(record.caption, record.parse["tokens"])
            syntax = syntax_targets(record.parse, positions, self.tokenizer.context_length)
        return Sample(LazyImage(images[0], record.where(), self.view), list(zip(captions, tokens)), boxes,
                      record.subreddit, syntax)


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
