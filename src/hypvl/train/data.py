"""The training stream: grounded shards -> shuffled (image, caption[, box crop, box phrase]) batches.

Three views of one grounded corpus, matching the papers' training setups:
- whole pairs only (CLIP, MERU);
- whole pairs plus every box as an extra independent pair ("CLIP/MERU w/ boxes", HyCoCLIP Table 1);
- whole pairs with one box drawn uniformly per step, samples without boxes dropped (HyCoCLIP).
A corrupt image is skipped and counted; past `max_corrupt_fraction` of the samples read, the run fails.
"""

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hypvl.data.transforms import random_resized_crop, to_tensor_batch
from hypvl.data.formats.grounded import iter_grounded
from hypvl.data.formats.images import CorruptImage, decode_image
from hypvl.errors import InputError


@dataclass
class StreamCounts:
    """How many samples the stream read, yielded and skipped (corrupt images, no box)."""

    read: int = 0
    corrupt: int = 0
    no_box: int = 0
    corrupt_examples: list[str] = field(default_factory=list)


class TrainingStream:
    """An endless, seeded stream of training batches from grounded shards."""

    def __init__(self, shards: list[Path], tokenizer, image_size: int, batch_size: int, mode: str,
                 seed: int, shuffle_buffer: int = 1000, max_corrupt_fraction: float = 0.01):
        if mode not in ("pairs", "boxes_as_pairs", "compositional"):
            raise ValueError(f"unknown stream mode {mode!r}")
        if not shards:
            raise InputError("no training shards given")
        self.shards, self.tokenizer, self.batch_size, self.mode = list(shards), tokenizer, batch_size, mode
        self.image_size = image_size
        self.rng = random.Random(seed)
        self.shuffle_buffer = shuffle_buffer
        self.max_corrupt_fraction = max_corrupt_fraction
        self.counts = StreamCounts()

    def _samples(self) -> Iterator[tuple]:
        """(image PIL, text[, box PIL, box text]) forever, shard order reshuffled every epoch."""
        while True:
            order = self.shards[:]
            self.rng.shuffle(order)
            for record in iter_grounded(order):
                self.counts.read += 1
                try:
                    yield from self._pairs(record)
                except CorruptImage as exc:
                    self._count_corrupt(str(exc))

    def _pairs(self, record) -> Iterator[tuple]:
        if self.mode == "compositional":
            if not record.boxes:
                self.counts.no_box += 1
                return
            crop, phrase = record.boxes[self.rng.randrange(len(record.boxes))]
            yield (decode_image(record.image, record.where()), record.caption,
                   decode_image(crop, record.where("box")), phrase)
            return
        yield decode_image(record.image, record.where()), record.caption
        if self.mode == "boxes_as_pairs":
            for i, (crop, phrase) in enumerate(record.boxes):
                yield decode_image(crop, record.where(f"parent{i:03d}.jpg")), phrase

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

    def _crops(self, images):
        """(B, 3, S, S) random resized crops (scale 0.5-1, bicubic), one per image, as MERU and HyCoCLIP train."""
        return to_tensor_batch([random_resized_crop(img, self.image_size, self.rng) for img in images])

    def _collate(self, batch: list[tuple]) -> dict:
        out = {"images": self._crops(s[0] for s in batch), "tokens": self.tokenizer([s[1] for s in batch])}
        if self.mode == "compositional":
            out["box_images"] = self._crops(s[2] for s in batch)
            out["box_tokens"] = self.tokenizer([s[3] for s in batch])
        return out
