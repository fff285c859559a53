"""The training stream: grounded shards -> shuffled (image, caption[, box crop, box phrase]) batches.

Three views of one grounded corpus, matching the papers' training setups:
- whole pairs only (CLIP, MERU);
- whole pairs plus every box as an extra independent pair ("CLIP/MERU w/ boxes", HyCoCLIP Table 1);
- whole pairs with one box drawn uniformly per step, samples without boxes dropped (HyCoCLIP).
A corrupt image is skipped and counted; past `max_corrupt_fraction` of the samples read, the run fails.

With `cache=True` each shard is parsed, its images decoded and its texts tokenised once, the first time
the stream reaches it, and later epochs reuse them (a smoke-scale corpus is a few hundred MB decoded; a
paper-scale one is streamed from its shards on every pass). Either way the stream draws the same random
numbers in the same order, so it yields the same batches. `batches(n)` prepares them on a background
thread, a few ahead of the training step.
"""

import queue
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from hypvl.data.formats.grounded import GroundedRecord, iter_grounded
from hypvl.data.formats.images import CorruptImage, decode_image
from hypvl.data.formats.shards import shard_paths
from hypvl.data.transforms import random_resized_crop, to_tensor_batch
from hypvl.errors import InputError

from .syntax import SyntaxTargets, collate_syntax, syntax_targets

MODES = ("pairs", "boxes_as_pairs", "compositional")


@dataclass
class StreamCounts:
    """How many samples the stream read, yielded and skipped (corrupt images, no box)."""

    read: int = 0
    corrupt: int = 0
    no_box: int = 0
    corrupt_examples: list[str] = field(default_factory=list)


class _Image:
    """An image of a record: decoded on first use; a decode failure is remembered and raised at every use."""

    __slots__ = ("data", "where", "decoded", "error")

    def __init__(self, data: bytes, where: str):
        self.data, self.where, self.decoded, self.error = data, where, None, None

    def get(self):
        if self.decoded is None and self.error is None:
            try:
                self.decoded = decode_image(self.data, self.where)
            except CorruptImage as exc:
                self.error = exc
            self.data = None  # keep the pixels (or the error), not the encoded bytes
        if self.error is not None:
            raise self.error
        return self.decoded


@dataclass
class _Sample:
    """One grounded record as the stream uses it: images (decoded lazily) and tokenised texts."""

    image: _Image
    caption: torch.Tensor
    boxes: list[tuple[_Image, torch.Tensor]]
    syntax: SyntaxTargets | None = None


class TrainingStream:
    """An endless, seeded stream of training batches from grounded shards."""

    def __init__(self, shards: list[Path], tokenizer, image_size: int, batch_size: int, mode: str,
                 seed: int, shuffle_buffer: int = 1000, max_corrupt_fraction: float = 0.01, cache: bool = True,
                 syntax: bool = False):
        if mode not in MODES or (syntax and mode != "pairs"):
            raise ValueError(f"unknown stream mode {mode!r}" + (" with syntax targets" if syntax else ""))
        self.shards = shard_paths(shards) if shards else []
        if not self.shards:
            raise InputError("no training shards given")
        self.syntax = syntax
        if syntax:
            _check_parsed(self.shards)
        self.tokenizer, self.batch_size, self.mode = tokenizer, batch_size, mode
        self.image_size = image_size
        self.rng = random.Random(seed)
        self.shuffle_buffer = shuffle_buffer
        self.max_corrupt_fraction = max_corrupt_fraction
        self.counts = StreamCounts()
        self._cache: dict[Path, list[_Sample]] | None = {} if cache else None
        self._tokens: dict[str, torch.Tensor] = {}  # text -> token ids: phrases repeat across records

    def _shard_samples(self, shard: Path) -> list[_Sample] | Iterator[_Sample]:
        """The samples of one shard: parsed once and kept when caching, else re-read on every pass."""
        if self._cache is None:
            return map(self._sample, iter_grounded(shard))
        if shard not in self._cache:
            self._cache[shard] = [self._sample(record) for record in iter_grounded(shard)]
        return self._cache[shard]

    def _sample(self, record: GroundedRecord) -> _Sample:
        texts = [record.caption, *(phrase for _, phrase in record.boxes)]
        new = [text for text in dict.fromkeys(texts) if text not in self._tokens]
        if new:
            self._tokens.update(zip(new, self.tokenizer(new)))
        boxes = [(_Image(crop, record.where(f"parent{i:03d}.jpg")), self._tokens[phrase])
                 for i, (crop, phrase) in enumerate(record.boxes)]
        syntax = None
        if self.syntax:
            if record.parse is None:
                raise _unparsed(record.source, record.key)
            positions = self.tokenizer.word_positions(record.caption, record.parse["tokens"])
            syntax = syntax_targets(record.parse, positions, self.tokenizer.context_length)
        return _Sample(_Image(record.image, record.where()), self._tokens[record.caption], boxes, syntax)

    def _samples(self) -> Iterator[tuple]:
        """(image PIL, tokens[, box PIL, box tokens]) forever, shard order reshuffled every epoch; a pass
        over every shard that yields nothing is an error (the stream would never fill a batch)."""
        while True:
            order = self.shards[:]
            self.rng.shuffle(order)
            yielded = 0
            for shard in order:
                for sample in self._shard_samples(shard):
                    self.counts.read += 1
                    try:
                        for pair in self._pairs(sample):
                            yielded += 1
                            yield pair
                    except CorruptImage as exc:
                        self._count_corrupt(str(exc))
            if not yielded:
                what = "samples with a box" if self.mode == "compositional" else "samples with a readable image"
                raise InputError(f"{self.shards[0].parent}: the training shards hold no {what} "
                                 f"({self.counts.read} samples read)")

    def _pairs(self, sample: _Sample) -> Iterator[tuple]:
        if self.mode == "compositional":
            if not sample.boxes:
                self.counts.no_box += 1
                return
            crop, phrase = sample.boxes[self.rng.randrange(len(sample.boxes))]
            yield sample.image.get(), sample.caption, crop.get(), phrase
            return
        if self.syntax:
            yield sample.image.get(), sample.caption, sample.syntax
            return
        yield sample.image.get(), sample.caption
        if self.mode == "boxes_as_pairs":
            for crop, phrase in sample.boxes:
                yield crop.get(), phrase

    def _count_corrupt(self, message: str) -> None:
        self.counts.corrupt += 1
        if len(self.counts.corrupt_examples) < 10:
            self.counts.corrupt_examples.append(message)
        fraction = self.counts.corrupt / max(self.counts.read, 1)
        if self.counts.read >= 100 and fraction > self.max_corrupt_fraction:
            raise InputError(f"{self.counts.corrupt} of {self.counts.read} training samples have corrupt images "
                             f"({fraction:.1%} > max_corrupt_fraction {self.max_corrupt_fraction:.1%}); "
                             f"first: {self.counts.corrupt_examples[0]}")

    def _shuffled(self) -> Iterator[tuple]:
        buffer = []
        for sample in self._samples():
            if len(buffer) < self.shuffle_buffer:
                buffer.append(sample)
                continue
            i = self.rng.randrange(len(buffer))
            yield buffer[i]
            buffer[i] = sample

    def __iter__(self) -> Iterator[dict]:
        batch = []
        for sample in self._shuffled():
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self._collate(batch)
                batch = []

    def batches(self, count: int, ahead: int = 2) -> Iterator[dict]:
        """The first `count` batches, prepared on a background thread up to `ahead` batches before they are
        taken; an error there is raised here. The stream reads exactly what `count` batches need."""
        return _background(iter(self), count, ahead)

    def _crops(self, images):
        """(B, 3, S, S) random resized crops (scale 0.5-1, bicubic), one per image, as MERU and HyCoCLIP train."""
        return to_tensor_batch([random_resized_crop(img, self.image_size, self.rng) for img in images])

    def _collate(self, batch: list[tuple]) -> dict:
        out = {"images": self._crops(s[0] for s in batch), "tokens": torch.stack([s[1] for s in batch])}
        if self.mode == "compositional":
            out["box_images"] = self._crops(s[2] for s in batch)
            out["box_tokens"] = torch.stack([s[3] for s in batch])
        if self.syntax:
            out.update(collate_syntax([s[2] for s in batch]))
        return out


def _unparsed(shard, key: str) -> InputError:
    return InputError(f"{shard}: sample {key!r} has no dependency parse (child.parse.json), which syntax-preserving "
                      "MERU trains on: ground the corpus with `hypvl ground`")


def _check_parsed(shards: list[Path]) -> None:
    """Refuse, before training, shards whose first sample has no parse (e.g. HyCoCLIP's released GRIT shards)."""
    for shard in shards:
        first = next(iter_grounded(shard), None)
        if first is not None and first.parse is None:
            raise _unparsed(shard, first.key)


_DONE = object()


def _background(items: Iterator, count: int, ahead: int) -> Iterator:
    """The first `count` items of `items`, computed by a worker thread at most `ahead` items early.

    Written by hand: torch's DataLoader parallelises map-style work across processes; this stream is one
    sequential, seeded generator whose state must stay in one place, so one thread and a bounded queue.
    """
    out: queue.Queue = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for _, item in zip(range(count), items):
                if not put(item):
                    return
            put(_DONE)
        except BaseException as exc:  # handed to the consumer, which raises it
            put(exc)

    worker = threading.Thread(target=work, name="training-batches", daemon=True)
    worker.start()
    try:
        while True:
            item = out.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()
