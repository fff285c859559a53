"""Split slices as MERU's catalog writes them (TFDS slicing syntax): `train`, `train[:90%]`, `train[5000:10000]`.

A slice names a source split and optional start and stop bounds, each a record count or a percentage of
the split. As TFDS' default "closest" rounding, a percentage p of a split of n records is the index
round(p * n / 100). Records are taken in the source split's order. An absolute bound beyond the split's
size is an error (the catalog's counts are meant exactly).

A scaled-down stand-in of a source split (the smoke world's, a few records per class) cannot hold the
catalog's record counts (`train[:4500]`). It stands for the records the linear-probe slices read from the
real split: the whole split, or, where those slices bound it by counts, its first E records, E the largest
count they name (`count_extents`: CLEVR's train 5,000, EuroSAT's train 10,000). A percentage stays a
percentage of the stand-in's n records, and a count b becomes round(b * n / E), the same fraction of the
stand-in as of what it stands for (`SplitSlice.indices(size, extent=E)`); so CLEVR's train[:4500] and
train[4500:5000] take 90% and 10% of the smoke split, as they take 90% and 10% of the 5,000 records MERU reads.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from hypvl.errors import InputError

SLICE = re.compile(r"(?P<split>[A-Za-z][\w-]*)(?:\[(?P<start>\d+%?)?:(?P<stop>\d+%?)?\])?")


@dataclass(frozen=True)
class SplitSlice:
    """Split `split`, records [start, stop): each bound None (the split's end), a count, or a percentage."""

    split: str
    start: str | None = None
    stop: str | None = None

    def indices(self, size: int, where: str = "", extent: int | None = None) -> range:
        """The record indices the slice takes from a split of `size` records; with `extent`, the split is a
        scaled-down stand-in for the real split's first `extent` records (module docstring)."""
        return range(self._index(self.start, 0, size, where, extent),
                     self._index(self.stop, size, size, where, extent))

    def _index(self, bound: str | None, default: int, size: int, where: str, extent: int | None) -> int:
        if bound is None:
            return default
        if bound.endswith("%"):
            if int(bound[:-1]) > 100:
                raise InputError(f"{where or self}: bound {bound} exceeds 100%")
            return round(int(bound[:-1]) * size / 100)
        index = int(bound) if extent is None else round(int(bound) * size / extent)
        if index > size:
            raise InputError(f"{where or self}: bound {bound} lies beyond the {size} records of split {self.split!r}")
        return index

    def counts(self) -> list[int]:
        """The bounds given as record counts."""
        return [int(bound) for bound in (self.start, self.stop) if bound is not None and not bound.endswith("%")]

    def __str__(self) -> str:
        if self.start is None and self.stop is None:
            return self.split
        return f"{self.split}[{self.start or ''}:{self.stop or ''}]"


def parse_split(text: str, where: str = "split") -> SplitSlice:
    """Parse `train`, `train[:90%]`, `train[10%:20%]`, `validation[:5000]`; `where` names the source in errors."""
    match = SLICE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise InputError(f"{where}: {text!r} is not a split slice like 'train', 'train[:90%]' or 'train[5000:10000]'")
    return SplitSlice(match["split"], match["start"], match["stop"])


def count_extents(slices: Iterable[SplitSlice], where: str) -> dict[str, int]:
    """Split -> E, the largest record count `slices` name on it: how many real records a scaled-down stand-in
    of that split stands for. A split bounded by a count must be bounded by counts only, each slice with a
    stop, or what the stand-in stands for is unknown."""
    slices = list(slices)
    extents = {}
    for split in {s.split for s in slices if s.counts()}:
        on_split = [s for s in slices if s.split == split]
        bad = [str(s) for s in on_split if s.stop is None or s.stop.endswith("%") or (s.start or "").endswith("%")]
        if bad:
            raise InputError(f"{where}: split {split!r} is bounded by record counts and by {', '.join(bad)}: a "
                             "scaled-down stand-in needs every slice of it to end at a record count")
        extents[split] = max(count for s in on_split for count in s.counts())
    return extents
