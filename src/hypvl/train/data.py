"""The training input pipeline: grounded webdataset shards -> seeded, resumable batches through a DataLoader.

Three views of one grounded corpus, which holds every pair of the raw corpus with the boxes grounding kept (none
for many), matching the papers' training setups (`MODES`):
- every whole pair (CLIP, MERU, PoinCLIP; syntax-preserving MERU with each caption's parse);
- every whole pair plus every box as an extra independent pair ("CLIP/MERU w/ boxes", HyCoCLIP Table 1: RedCaps'
  11.4M pairs + 6.3M boxes): the pairs and boxes are shuffled as items of their own, so that a box seldom meets its
  parent caption in a batch, as among 17.7M independent samples;
- the pairs with a box, one box drawn uniformly per sample, samples without boxes dropped (HyCoCLIP: 5.8M of them).
With `subreddit_prefix` p > 0, a caption is prefixed with its RedCaps subreddit with probability p (MERU Sec. 4.1).
With `image_view` "border", a whole image is first border-padded to a square as HyCoCLIP's shards store it.
A sample with several captions (a YFCC15M photo's title and description) trains with one drawn uniformly at every
access, as SLIP's loader does (datasets.py: `np.random.choice([title, desc])`).

Shards are read by `hypvl.train.records` (webdataset, each sample checked complete). The shards are dealt
round-robin to *readers*, one per DataLoader worker (or the process itself) of each data-parallel rank. Each
epoch a reader visits its shards in a seeded order, a *window* of consecutive shards holding at least
`shuffle_buffer` samples at a time, and yields the window's items (its samples; with boxes as pairs, their pairs and
boxes) in a seeded order: the mixing of webdataset's shuffle buffer, but every draw (order, box, prefix, caption,
the batch's crops) is a function of (seed, reader, epoch, window, position), so a reader's `ReaderState` says
exactly where its stream is, and a reader restarted from one continues it bitwise. Images get torchvision.transforms.v2's RandomResizedCrop
(scale 0.5-1, bicubic, as MERU and HyCoCLIP train). A corrupt image is skipped and counted; past
`max_corrupt_fraction` of the samples read, the run fails.

With `cache=True` a reader keeps each shard parsed, decoded and tokenised after its first pass (a smoke-scale
corpus fits in memory; a paper-scale one is streamed from its shards on every pass), reading the shard's decoded
twin where grounding wrote one (`hypvl.data.formats.decoded`); the batches are the same.
"""

import copy
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info
from torchvision.transforms import v2

from hypvl.data.formats.images import CorruptImage, border_stored
from hypvl.data.formats.shards import shard_paths
from hypvl.data.transforms import to_uint8_batch
from hypvl.errors import InputError
from hypvl.runtime.loader_processes import check_shared_memory

from .records import LazyImage, Sample, ShardSamples, check_parsed
from .stopping import ignore_in_loader
from .subreddits import prefixed_caption
from .syntax import collate_syntax

MODES = ("pairs", "boxes_as_pairs", "compositional")
VIEWS = ("original", "border")  # how a whole image is viewed before its crop (hypvl.train.recipe.IMAGE_VIEWS)
STREAM_ORDER = 2  # how items are ordered (a resume recipe's): 2, a sample's pair and boxes shuffled apart
CROP_SCALE = (0.5, 1.0)
PREFETCH = 4  # batches each loader process makes ahead


@dataclass
class ReaderState:
    """Where a reader's stream is: its epoch, the window (index of the window's first shard in the epoch's shard
    order) and the item next in the window's order; and its counts of samples read, corrupt images skipped (with the
    first few messages), samples dropped for having no box, the image-caption pairs and boxes trained on
    (`pairs_seen`, `boxes_seen`: every visit) and those of its first epoch (`corpus_pairs`, `corpus_boxes`: its
    share of the corpus as the mode reads it, a box counted once)."""

    epoch: int = 0
    window: int = 0
    index: int = 0
    read: int = 0
    corrupt: int = 0
    no_box: int = 0
    corrupt_examples: list[str] = field(default_factory=list)
    pairs_seen: int = 0
    boxes_seen: int = 0
    corpus_pairs: int = 0
    corpus_boxes: int = 0

    def position(self) -> tuple[int, int, int]:
        return self.epoch, self.window, self.index


class TrainingStream(IterableDataset):
    """Seeded batches of a grounded corpus for one data-parallel rank, each reader resumable (module docstring).

    Iterated through `loader()`: each yielded batch holds the tensors and `stream` = (reader, ReaderState as a
    dict after the batch), or, when the stream fails on bad input, only `error` (the message), which the
    consumer raises: a worker process's exception would reach it as a traceback.
    """

    def __init__(self, shards: list[Path], tokenizer, image_size: int, batch_size: int, mode: str, seed: int,
                 shuffle_buffer: int = 1000, max_corrupt_fraction: float = 0.01, cache: bool = True,
                 syntax: bool = False, subreddit_prefix: float = 0.0, image_view: str = "original", rank: int = 0,
                 world: int = 1, workers: int = 0, states: dict[int, dict] | None = None, rotation: int = 0):
        if mode not in MODES or (syntax and mode != "pairs"):
            raise ValueError(f"unknown stream mode {mode!r}" + (" with syntax targets" if syntax else ""))
        if image_view not in VIEWS:
            raise ValueError(f"unknown image view {image_view!r} (one of {', '.join(VIEWS)})")
        self.shards = shard_paths(shards) if shards else []
        if not self.shards:
            raise InputError("no training shards given")
        if syntax:
            check_parsed(self.shards)
        if syntax and subreddit_prefix:
            raise ValueError("a subreddit prefix would misalign the caption with its parse")
        self.tokenizer, self.image_size, self.batch_size, self.mode = tokenizer, image_size, batch_size, mode
        self.seed, self.shuffle_buffer, self.max_corrupt_fraction = seed, shuffle_buffer, max_corrupt_fraction
        self.cache, self.syntax, self.subreddit_prefix, self.image_view = cache, syntax, subreddit_prefix, image_view
        self.workers = workers
        slots = max(1, workers)
        readers = world * slots
        if len(self.shards) < readers:
            raise InputError(f"{self.shards[0].parent}: {len(self.shards)} training shards cannot feed {world} "
                             f"process(es) x {slots} reader(s): every reader needs a shard of its own (fewer "
                             "DataLoader workers, or smaller shards)")
        self.readers = [rank * slots + slot for slot in range(slots)]  # this rank's readers
        self.shards_of = {reader: self.shards[reader::readers] for reader in self.readers}
        self.states = {reader: ReaderState(**copy.deepcopy((states or {}).get(reader, {}))) for reader in self.readers}
        self.rotation = rotation  # batches already consumed: the reader of the loader's first worker

    def __iter__(self) -> Iterator[dict]:
        info = get_worker_info()
        slot = ((info.id if info is not None else 0) + self.rotation) % len(self.readers)
        reader = self.readers[slot]
        try:
            yield from _Reader(self, reader, self.states[reader]).batches()
        except InputError as exc:
            yield {"error": str(exc)}

    def batch_bytes(self) -> int:
        """Bytes of a batch: per view (image; HyCoCLIP's box) uint8 pixels, int64 tokens (syntax targets left out)."""
        views = 2 if self.mode == "compositional" else 1
        return views * self.batch_size * (3 * self.image_size**2 + 8 * self.tokenizer.context_length)

    def loader(self, pin_memory: bool = False, processes: int = 1) -> DataLoader:
        """A DataLoader: `workers` seeded processes (0: this one) making batches in turn (worker k: k, k + workers,
        ...), pinned when asked; refused where this machine's `processes` training processes lack shared memory."""
        check_shared_memory(self.batch_bytes(), self.workers, PREFETCH, "train.num_workers", processes)
        return DataLoader(self, batch_size=None, num_workers=self.workers, pin_memory=pin_memory,
                          prefetch_factor=PREFETCH if self.workers else None, worker_init_fn=ignore_in_loader,
                          generator=torch.Generator().manual_seed(self.seed))


class _Reader:
    """One reader's endless stream of batches, from `state` on (advanced in place)."""

    def __init__(self, stream: TrainingStream, reader: int, state: ReaderState):
        self.stream, self.reader, self.state = stream, reader, state
        self.shards = stream.shards_of[reader]
        self.crop = v2.RandomResizedCrop(stream.image_size, scale=CROP_SCALE,
                                         interpolation=v2.InterpolationMode.BICUBIC, antialias=True)
        view = (lambda image: border_stored(image, stream.image_size)) if stream.image_view == "border" else None
        self.samples = ShardSamples(stream.tokenizer, stream.cache, stream.syntax, stream.subreddit_prefix > 0, view)

    def batches(self) -> Iterator[dict]:
        items = self._items()
        state = self.state
        while True:
            # the crops' seed: the batch's first position, and a 0 where a position once also counted a sample's
            # pairs (before pairs and boxes were shuffled apart), so that every stream read as before crops as before
            begin = (self.stream.seed, self.reader, *state.position(), 0)
            batch = [next(items) for _ in range(self.stream.batch_size)]
            yield {**self._collate(batch, begin), "stream": (self.reader, asdict(state))}

    def _rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng([self.stream.seed, self.reader, *key])

    def _items(self) -> Iterator[tuple]:
        """The reader's training items forever (mode-dependent tuples), advancing the state before each yield, so
        that after a batch the state points at the next item. A whole epoch that yields nothing is an error (the
        stream would never fill a batch)."""
        state = self.state
        while True:
            whole_epoch, yielded = state.position()[1:] == (0, 0), False
            order = self._rng(state.epoch).permutation(len(self.shards))
            while state.window < len(order):
                samples, end = self._window(order, state.window)
                units = self._units(samples)
                rng = self._rng(state.epoch, state.window)
                permutation, draws = rng.permutation(len(units)), rng.random((len(samples), 2))
                draws = np.column_stack([draws, rng.random(len(samples))])  # the caption's draw after the others
                while state.index < len(units):
                    i, part = units[permutation[state.index]]
                    state.index += 1
                    item = self._item(samples[i], part, draws[i])
                    if item is not None:
                        yielded = True
                        yield item
                state.window, state.index = end, 0
            if whole_epoch and not yielded:
                what = "samples with a box" if self.stream.mode == "compositional" else "samples with a readable image"
                raise InputError(f"{self.shards[0].parent}: the training shards hold no {what} "
                                 f"({state.read} samples read)")
            state.epoch, state.window = state.epoch + 1, 0

    def _units(self, samples: list[Sample]) -> list[tuple[int, int]]:
        """The window's items before shuffling, (sample, part): one a sample, part 0; with boxes as pairs, also part
        k for its box k - 1, each shuffled on its own (HyCoCLIP's "additional pre-training samples")."""
        if self.stream.mode != "boxes_as_pairs":
            return [(i, 0) for i in range(len(samples))]
        return [(i, part) for i, sample in enumerate(samples) for part in range(1 + len(sample.boxes))]

    def _window(self, order, start: int) -> tuple[list[Sample], int]:
        """The samples of the shards order[start:end], end the first index at which they hold `shuffle_buffer`."""
        samples, end = [], start
        while end < len(order) and (end == start or len(samples) < self.stream.shuffle_buffer):
            samples += self.samples.of(self.shards[order[end]])
            end += 1
        return samples, end

    def _item(self, sample: Sample, part: int, draws: np.ndarray) -> tuple | None:
        """One training item of a sample (None where it is skipped: no box for HyCoCLIP, or a corrupt image), counted:
        part 0 its pair (HyCoCLIP's: with a box), part k its box k - 1 as a pair of its own. `draws` are the
        sample's three uniform draws: the caption prefix's coin, the box and the caption (of several; a syntax run
        keeps the parsed first)."""
        state, stream = self.state, self.stream
        if part:
            return self._box_item(*sample.boxes[part - 1])
        state.read += 1
        if stream.mode == "compositional" and not sample.boxes:
            state.no_box += 1
            return None
        try:
            image = sample.image.get()
            if stream.mode == "compositional":
                crop, phrase = sample.boxes[int(draws[1] * len(sample.boxes))]
                box = (crop.get(), phrase)
        except CorruptImage as exc:
            self._count_corrupt(str(exc))
            return None
        state.pairs_seen += 1
        state.boxes_seen += stream.mode == "compositional"  # HyCoCLIP's pair trains with one of its boxes
        if state.epoch == 0:
            state.corpus_pairs += 1
            state.corpus_boxes += len(sample.boxes) if stream.mode == "compositional" else 0
        caption, tokens = sample.captions[0 if stream.syntax else int(draws[2] * len(sample.captions))]
        if draws[0] < stream.subreddit_prefix:
            [tokens] = self.samples.tokenised([prefixed_caption(caption, sample.subreddit)])
        if stream.syntax:
            return image, tokens, sample.syntax
        return (image, tokens, *box) if stream.mode == "compositional" else (image, tokens)

    def _box_item(self, crop: LazyImage, phrase: torch.Tensor) -> tuple | None:
        """A box crop and its phrase as a pair of its own (boxes as pairs), counted; None where the crop is corrupt."""
        state = self.state
        try:
            image = crop.get()
        except CorruptImage as exc:
            self._count_corrupt(str(exc))
            return None
        state.boxes_seen += 1
        state.corpus_boxes += state.epoch == 0
        return image, phrase

    def _count_corrupt(self, message: str) -> None:
        state = self.state
        state.corrupt += 1
        if len(state.corrupt_examples) < 10:
            state.corrupt_examples.append(message)
        fraction = state.corrupt / max(state.read, 1)
        if state.read >= 100 and fraction > self.stream.max_corrupt_fraction:
            raise InputError(f"{state.corrupt} of {state.read} training samples have corrupt images "
                             f"({fraction:.1%} > max_corrupt_fraction {self.stream.max_corrupt_fraction:.1%}); "
                             f"first: {state.corrupt_examples[0]}")

    def _collate(self, batch: list[tuple], begin: tuple[int, ...]) -> dict:
        """Tensors of a batch; the random crops are seeded by the batch's first position."""
        seed = int(np.random.SeedSequence(begin).generate_state(1, dtype=np.uint64)[0])
        compositional = self.stream.mode == "compositional"
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)  # the CPU generator only (torch.manual_seed also queues GPUs')
            out = {"images": self._views(s[0] for s in batch), "tokens": torch.stack([s[1] for s in batch])}
            if compositional:
                out["box_images"] = self._views(s[2] for s in batch)
                out["box_tokens"] = torch.stack([s[3] for s in batch])
        if self.stream.syntax:
            out.update(collate_syntax([s[2] for s in batch]))
        return out

    def _views(self, images) -> torch.Tensor:
        """(B, S, S, 3) uint8 pixels (floats where the step runs): a RandomResizedCrop of each image, drawn from
        torch's generator; the transform's two steps called directly (a plain call re-packs its input each time)."""
        crop = self.crop
        return to_uint8_batch([crop.transform(image, crop.make_params([image])) for image in images])
