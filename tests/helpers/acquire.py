"""The acquisition fixtures (tests/data/acquire), the packaged catalog and an opener serving them."""

import io
import urllib.error
from pathlib import Path

from helpers import REPO
from hypvl.data import catalog


FIXTURES = REPO / "tests" / "data" / "acquire"
PREFIX = "https://fixtures.invalid/"
CATALOG = Path(catalog.__file__).parent / "catalog"


class FixtureResponse(io.BytesIO):
    """An HTTP response body that can break (ConnectionResetError) after `cut` bytes; a 206 says its Content-Range
    (from `start` of a file of `total` bytes)."""

    def __init__(self, body, status, cut=None, start=0, total=None):
        super().__init__(body)
        self.status, self.cut = status, cut
        total = start + len(body) if total is None else total
        self.headers = {"Content-Range": f"bytes {start}-{total - 1}/{total}"} if status == 206 else {}

    def read(self, size=-1):
        if self.cut is not None and self.tell() >= self.cut:
            raise ConnectionResetError("connection reset by fixture")
        if self.cut is not None:
            size = min(size if size > 0 else self.cut, self.cut - self.tell())
        return super().read(size)


class FixtureOpener:
    """urlopen stand-in serving tests/data/acquire files, honouring Range unless told not to;
    `cuts` maps a URL to the number of bytes after which its next response breaks."""

    def __init__(self, cuts=None, honour_range=True):
        self.cuts, self.honour_range, self.ranges = dict(cuts or {}), honour_range, []

    def __call__(self, request):
        url, byte_range = request.full_url, request.get_header("Range")
        self.ranges.append(byte_range)
        data = (FIXTURES / url.removeprefix(PREFIX)).read_bytes()
        start = int(byte_range.removeprefix("bytes=").rstrip("-")) if byte_range else 0
        if not self.honour_range:
            start = 0
        elif start >= len(data) and byte_range:
            raise urllib.error.HTTPError(url, 416, "Range Not Satisfiable", {}, None)
        status = 206 if start else 200
        return FixtureResponse(data[start:], status, self.cuts.pop(url, None), start, len(data))
