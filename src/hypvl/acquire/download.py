"""Downloads over https: resumable, verified, bounded in time, never written through a link.

A download goes to `<file>.part`, resumes with an HTTP Range request after an interruption (a response shorter than
its Content-Length is one), is checked against its sha256 (or md5) and renamed into place. A resumed answer is kept
only where its Content-Range starts where the part ends; one from byte 0 (a server ignoring the Range) starts the part
afresh, any other is dropped and the file asked for whole; a part that grows past the length the server declared is
deleted and the next attempt starts from zero, as is a part longer than the server's file (its 416). The part is
written only where it is a file of our own (a regular file with no other link): a symlink or hard link at its name (a
mirror's file a killed fetch linked there) is removed, what it links to untouched, and a new file started. Every
blocking step (the connection, the TLS handshake, each read) times out after TIMEOUT seconds; an attempt that fails
(or an HTTP 408, 429 or 5xx; not a host name that does not exist) is retried a limited number of times, BACKOFF
seconds after the first failure and twice as long after each next one. A redirect is followed only within its
scheme: an https download never continues in the clear. Only https URLs are fetched, or file:// URLs of a local
mirror (`hypvl.acquire.mirror`), whose files are linked (or copied) to `<file>.mirrored`, verified and renamed into
place. Written on urllib (the standard library's): what it lacks here is the scheme rule, a redirect handler.
"""

import contextlib
import http.client
import logging
import os
import re
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from hypvl.errors import InputError
from hypvl.io import link_or_copy
from hypvl.provenance import file_digest

from .partfile import open_part, resumable_size

log = logging.getLogger(__name__)
CHUNK_SIZE = 1 << 20
TIMEOUT = 60.0  # seconds a connection, a TLS handshake or a read may stall before the attempt fails (and is retried)
BACKOFF = 5.0  # seconds before the second attempt, doubled before each further one
TRANSIENT = frozenset({408, 429})  # HTTP statuses (with every 5xx) that are retried rather than final
CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
UNSATISFIED = re.compile(r"bytes \*/(\d+)")  # a 416's Content-Range: the file's length


class ChecksumMismatch(InputError):
    """A downloaded file's digest differs from the manifest's or the recorded one."""


class SameSchemeRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to a URL of the same scheme: an https download never continues over http."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = urlsplit(req.full_url).scheme, urlsplit(newurl).scheme
        if new != old:
            raise InputError(f"{req.full_url}: redirected ({code}) to {newurl}, from {old} to {new}: refused")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def url_opener(schemes=("https",), timeout: float = TIMEOUT):
    """An opener(request) -> response for URLs of `schemes` only (https; file for a local mirror), with `timeout` on
    every blocking step and redirects within the scheme only."""
    director = urllib.request.build_opener(SameSchemeRedirects)

    def open_url(request):
        if urlsplit(request.full_url).scheme not in schemes:
            raise InputError(f"{request.full_url}: not fetched (only {' and '.join(schemes)} URLs are)")
        return director.open(request, timeout=timeout)

    return open_url


def _status(response):
    """HTTP status code of an opener's response."""
    return getattr(response, "status", None) or response.getcode()


def _header(response, name) -> str | None:
    headers = getattr(response, "headers", None)
    return headers.get(name) if headers is not None else None


def _body_range(response) -> tuple[int | None, int | None]:
    """(the byte of the file the body starts at, the file's length where declared): a 200's is (0, its
    Content-Length), a 206's its Content-Range's; (None, None) for a 206 whose Content-Range is missing or unread."""
    length = _header(response, "Content-Length")
    if _status(response) != 206:
        return 0, int(length) if length and length.strip().isdigit() else None
    declared = CONTENT_RANGE.fullmatch((_header(response, "Content-Range") or "").strip())
    if declared is None:
        return None, None
    start, _, total = declared.groups()
    return int(start), None if total == "*" else int(total)


def _request(url, opener, offset):
    """The response to a GET of `url` from byte `offset`; for a 416 (nothing past `offset`), the file's length the
    server declares (`offset` where it declares none)."""
    try:
        return opener(urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {}))
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:
            declared = UNSATISFIED.fullmatch(((error.headers or {}).get("Content-Range") or "").strip())
            return int(declared.group(1)) if declared else offset
        if error.code in TRANSIENT or error.code >= 500:
            raise ConnectionError(f"HTTP {error.code} {error.reason}") from None
        raise InputError(f"{url}: HTTP {error.code} {error.reason}") from error


def _download_to_part(url, part, opener, chunk_size):
    """Append the rest of `url` to `part` (a Range from its size), or write it afresh where the server sends it from
    byte 0; a response starting elsewhere, or a part longer than the file, is dropped and the file asked for from
    zero."""
    offset = resumable_size(part)
    response = _request(url, opener, offset)
    if isinstance(response, int):  # a 416: nothing past `offset`
        if response == offset:
            return  # the part is complete
        log.warning("%s: %s holds %d bytes, the server's file %d: starting over from zero", url, part, offset, response)
        return _download_to_part(url, _dropped(part), opener, chunk_size)
    with response:
        start, total = _body_range(response)
        if start in (0, offset):
            return _write_body(response, part, start == offset > 0, total, chunk_size)
        answered = _header(response, "Content-Range")
        if not offset:
            raise ConnectionError(f"the server answered a request for the whole file with Content-Range {answered!r}")
        log.warning("%s: asked for bytes %d on, the server answered Content-Range %r: starting %s over from zero",
                    url, offset, answered, part)
    return _download_to_part(url, _dropped(part), opener, chunk_size)


def _write_body(response, part, append: bool, total: int | None, chunk_size) -> None:
    """Write `response`'s body to `part` (appended, or into a new file); ConnectionError where the body or the file
    falls short of its declared length (resumable), or the file outgrows it (deleted: the next attempt starts over)."""
    received = 0
    with os.fdopen(open_part(part, append), "wb") as handle:
        while chunk := response.read(chunk_size):
            handle.write(chunk)
            received += len(chunk)
        handle.flush()
        size = os.fstat(handle.fileno()).st_size
    expected = _header(response, "Content-Length")
    if expected is not None and received < int(expected):
        raise ConnectionError(f"connection closed after {received} of {expected} bytes")
    if total is not None and size > total:
        _dropped(part)
        raise ConnectionError(f"the file came to {size} bytes, over the {total} the server declared: deleted, to "
                              "start over from zero")
    if total is not None and size < total:
        raise ConnectionError(f"{size} of the {total} bytes the server declared came")


def _dropped(part: Path) -> Path:
    """`part`, deleted (ours: written by a download)."""
    with contextlib.suppress(FileNotFoundError):
        part.unlink()
    return part


def fetch_file(url, path, sha256=None, md5=None, opener=None, retries=2, chunk_size=CHUNK_SIZE, local=None,
               check=None, backoff=None):
    """Download `url` to `path` via `path`.part, resuming up to `retries` times after an interruption (`backoff`
    seconds apart, doubling; default BACKOFF), or take it from `local`, a local mirror's file (`hypvl.io.link_or_copy`:
    hard-linked where it can be, via `path`.mirrored); `check(candidate, path, url)` may refuse what came (an
    InputError; the candidate is then removed); verify sha256/md5 when given; return the sha256 of the file renamed into
    place (refused if it changed while it was verified). An existing `path` is only verified."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return verify(path, url, path, sha256, md5)
    part, mirrored = path.with_name(path.name + ".part"), path.with_name(path.name + ".mirrored")
    if local is not None:
        _dropped(part)  # a killed download's: this fetch takes the mirror's file instead
        link_or_copy(local, mirrored)
        candidate = mirrored
    else:
        _dropped(mirrored)  # a killed mirror fetch's link: never written, only unlinked
        _download_with_retries(url, part, opener or url_opener(), retries, chunk_size,
                               BACKOFF if backoff is None else backoff)
        candidate = part
    if check is not None:
        try:
            check(candidate, path, url)
        except InputError:
            candidate.unlink()  # written or linked just now, by this fetch
            raise
    before = os.stat(candidate)
    digest = verify(candidate, url, path, sha256, md5)
    os.replace(candidate, path)
    _unchanged_since(path, before, url)
    return digest


def _unchanged_since(path: Path, before: os.stat_result, url) -> None:
    """InputError (`path` removed: ours, just renamed into place) unless `path` is the very file, as it was, that was
    verified: another writer (a second acquisition, a mirror rewritten) must not leave a file its digest is not."""
    after = os.stat(path)
    if (after.st_ino, after.st_dev, after.st_size, after.st_mtime_ns) != \
            (before.st_ino, before.st_dev, before.st_size, before.st_mtime_ns):
        path.unlink()
        raise InputError(f"{path} (from {url}): changed while it was verified (another process writing it?); "
                         "removed, nothing recorded: fetch it again")


def _download_with_retries(url, part, opener, retries, chunk_size, backoff):
    """`_download_to_part`, resumed up to `retries` times after an interruption, `backoff` seconds after the first and
    twice as long after each next; InputError once they are spent."""
    for attempt in range(retries + 1):
        try:
            return _download_to_part(url, part, opener, chunk_size)
        except (OSError, http.client.HTTPException) as error:
            if _no_such_host(error):
                raise InputError(f"{url}: download failed ({error}): no such host, not retried") from None
            if attempt == retries:
                kept = f"; {part} is kept to resume from" if part.exists() else ""
                raise InputError(f"{url}: download failed after {retries + 1} attempts ({error}){kept}") from None
            delay = backoff * 2 ** attempt
            log.info("%s: attempt %d of %d failed (%s); trying again in %g s", url, attempt + 1, retries + 1, error,
                     delay)
            time.sleep(delay)


def _no_such_host(error) -> bool:
    """True for a host name the resolver says does not exist (not a resolver that could not be asked: EAI_AGAIN)."""
    reason = getattr(error, "reason", None)
    return isinstance(reason, socket.gaierror) and reason.errno == socket.EAI_NONAME


def verify(candidate, url, path, sha256, md5):
    """sha256 of `candidate`; raise ChecksumMismatch naming `path` if it fails a given digest.
    A failed download's part file is deleted so the next fetch starts afresh."""
    actual = {"sha256": file_digest(candidate)}
    if md5 is not None:
        actual["md5"] = file_digest(candidate, "md5")
    for algorithm, expected in (("sha256", sha256), ("md5", md5)):
        if expected is not None and actual[algorithm] != expected.lower():
            if candidate != path:
                candidate.unlink()
            raise ChecksumMismatch(f"{path} (from {url}): {algorithm} is {actual[algorithm]}, "
                                   f"expected {expected}")
    return actual["sha256"]
