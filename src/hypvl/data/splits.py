"""Split slices as MERU's catalog writes them (TFDS slicing syntax): `train`, `train[:90%]`, `train[5000:10000]`.

A slice names a source split and optional start and stop bounds, each a record count or a percentage of
the split. As TFDS' default "closest" rounding, a percentage p of a split of n records is the index
round(p * n / 100). Records are taken in the source split's order. An absolute bound beyond the split's
size is an error (the catalog's counts are meant exactly).
"""

import re
from dataclasses import dataclass

from hypvl.errors import InputError

SLICE = re.compile(r"(?P<split>[A-Za-z][\w-]*)(?:\[(?P<start>\d+%?)?:(?P<stop>\d+%?)?\])?")


@dataclass(frozen=True)
class SplitSlice:
    """Split `split`, records [start, stop): each bound None (the split's end), a count, or a percentage."""

    split: str
    start: str | None = None
    stop: str | None = None

    def indices(self, size: int, where: str = "") -> range:
        """The record indices the slice takes from a split of `size` records."""
        return range(self._index(self.start, 0, size, where), self._index(self.stop, size, size, where))

    def _index(self, bound: str | None, default: int, size: int, where: str) -> int:
        if bound is None:
            return default
        if bound.endswith("%"):
            if int(bound[:-1]) > 100:
                raise InputError(f"{where or self}: bound {bound} exceeds 100%")
            return round(int(bound[:-1]) * size / 100)
        if int(bound) > size:
            raise InputError(f"{where or self}: bound {bound} lies beyond the {size} records of split {self.split!r}")
        return int(bound)

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
