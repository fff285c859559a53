"""Reading a raw training corpus for grounding: its records in order, the samples it passes over counted, from
where an earlier attempt stopped.

Images are decoded by a pool of threads ahead of the reading (Pillow releases the GIL while decoding); the records,
the skips and the position come out in the reader's order all the same, so that a shard's position is exactly its
last sample's and a grounding continued after it counts nothing twice.
"""

import logging
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hypvl.data.formats.cc3m import iter_cc3m
from hypvl.data.formats.grit import iter_grit
from hypvl.data.formats.images import CorruptImage, decode_image
from hypvl.data.formats.oracle_regions import ORACLE_REGIONS, read_oracle_regions
from hypvl.data.formats.redcaps import iter_redcaps
from hypvl.data.formats.yfcc import iter_yfcc
from hypvl.errors import InputError
from hypvl.grounding.pipeline import grit_record, thread_pool

log = logging.getLogger(__name__)

RAW_READERS = {"grit": iter_grit, "redcaps": iter_redcaps, "cc3m": iter_cc3m, "yfcc": iter_yfcc}
SKIPPING_READERS = {"yfcc"}  # readers that pass over a listed sample they cannot make (`skip`) instead of failing
SKIP_REASONS = ("corrupt", "no_image", "no_text")  # counted as samples_<reason>
CHECK_SKIPS_FROM = 1000  # raw samples listed before the skipped fraction is checked as grounding goes
DECODE_AHEAD = 8  # samples decoded ahead of the reading, for each decoding thread


@dataclass
class RawPosition:
    """How far a raw corpus has been read: the samples its reader gave (`read`) and the samples listed (`listed`:
    those and the rows the reader passed over itself)."""

    read: int = 0
    listed: int = 0


class Skips:
    """Raw samples passed over, counted in `counts` (samples_corrupt: the image does not decode; samples_no_image,
    samples_no_text: a YFCC15M row without its photo or any text); more than `max_fraction` of the samples listed
    (`position.listed`) is an InputError naming `folder`, checked as grounding goes and at its end. While `paused`
    (passing over what an earlier attempt read) it counts nothing."""

    def __init__(self, folder: Path, counts: dict, max_fraction: float, position: RawPosition):
        self.folder, self.counts, self.max_fraction, self.position = folder, counts, max_fraction, position
        self.last, self.paused = "", False
        for reason in SKIP_REASONS:
            counts.setdefault(f"samples_{reason}", 0)

    @property
    def listed(self) -> int:
        return self.position.listed

    def __call__(self, reason: str, message: str) -> None:
        if self.paused:
            return
        self.counts[f"samples_{reason}"] += 1
        self.position.listed += 1
        self.last = message
        if sum(self.counts[f"samples_{r}"] for r in SKIP_REASONS) <= 3:
            log.warning("skipped: %s", message)
        self.check(final=False)

    def check(self, final: bool) -> None:
        skipped = sum(self.counts[f"samples_{r}"] for r in SKIP_REASONS)
        if (final or self.listed >= CHECK_SKIPS_FROM) and skipped > self.max_fraction * self.listed:
            found = ", ".join(f"{self.counts[f'samples_{r}']} {r}" for r in SKIP_REASONS)
            raise InputError(f"{self.folder}: {skipped} of {self.listed} raw samples skipped ({found}), more than "
                             f"grounding.max_skipped_fraction {self.max_fraction:.1%}; the last: {self.last}")


def raw_records(fmt: str, folder: Path, oracle: bool, counts: dict, max_skipped_fraction: float = 1.0,
                position: RawPosition | None = None, threads: int = 1) -> Iterator[dict]:
    """Records {"key", "image" (PIL), "image_bytes", "caption"[, "captions"][, "subreddit"][, "regions" | "spans"]} of
    a raw corpus folder, from `position` on (what an earlier attempt read, passed over undecoded; `counts` hold what it
    counted), which follows the reading; `threads` threads decode the images ahead.

    GRIT records carry their own spans (`grit_record`); RedCaps/CC3M records get the side file's regions
    when `oracle`. YFCC15M records keep every caption the stream draws from (title and description). Samples whose
    image does not decode, and YFCC15M rows without photo or text, are skipped and counted (`Skips`)."""
    if fmt not in RAW_READERS:
        raise InputError(f"{folder}: unknown raw corpus format {fmt!r} (one of {sorted(RAW_READERS)})")
    regions = read_oracle_regions(folder / ORACLE_REGIONS) if oracle and fmt != "grit" else None
    position = RawPosition() if position is None else position
    start, skips = position.read, Skips(folder, counts, max_skipped_fraction, position)
    events = deque()  # in the reader's order: (reason, message) of a row it passed over, or (read, sample, decoding)
    reader = RAW_READERS[fmt]  # a skipping reader's own skips are counted when their turn comes
    samples = reader(folder, lambda *skip: events.append(skip)) if fmt in SKIPPING_READERS else reader(folder)
    taken_reads = 0  # samples of the reader taken from `events`

    def taken(event) -> Iterator[dict]:
        """The record of `event` where it is a sample read after `start`; its skip counted where it is one."""
        nonlocal taken_reads
        if not isinstance(event[0], int):
            skips.paused = taken_reads < start  # the reader's skips up to sample `start` were counted then
            skips(*event)
            return
        read, sample, decoding = event
        taken_reads = read
        if read <= start:
            return
        position.read, skips.paused = read, False
        try:
            record = decoding.result()
        except CorruptImage as exc:
            skips("corrupt", str(exc))
            return
        position.listed += 1
        if regions is not None:
            if sample.key not in regions:
                raise InputError(f"{folder / ORACLE_REGIONS}: no regions for sample {sample.key!r}")
            record["regions"] = regions[sample.key]
        record["image_bytes"] = sample.image
        yield record

    with thread_pool(threads) as pool:
        queued = 0
        for read, sample in enumerate(samples, 1):
            events.append((read, sample, None if read <= start else pool.submit(_record, fmt, sample, folder)))
            queued += 1
            while queued > DECODE_AHEAD * threads:
                event = events.popleft()
                queued -= isinstance(event[0], int)
                yield from taken(event)
        while events:
            yield from taken(events.popleft())
    skips.check(final=True)


def _record(fmt: str, sample, folder: Path) -> dict:
    """The record of a raw `sample`, its image decoded (CorruptImage where it does not decode)."""
    shard = getattr(sample, "shard", None) or folder  # YFCC15M: a folder of images, no shards
    if fmt == "grit":
        return grit_record(sample, str(shard))
    record = {"key": sample.key, "image": decode_image(sample.image, f"{shard}: sample {sample.key!r}"),
              "caption": sample.caption}
    if fmt == "redcaps":  # kept for MERU's text augmentation
        record["subreddit"] = sample.subreddit
    if fmt == "yfcc":  # SLIP draws title or description at every access
        record["captions"] = sample.captions
    return record
