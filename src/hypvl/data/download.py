"""Downloads over https: resumable, verified, bounded in time.

A download goes to `<file>.part`, resumes with an HTTP Range request after an interruption (a response shorter than
its Content-Length is one), is checked against its sha256 (or md5) and renamed into place. Every blocking step (the
connection, the TLS handshake, each read) times out after TIMEOUT seconds, an attempt that fails is retried a
limited number of times, and a redirect is followed only within its scheme: an https download never continues in
the clear. Only https URLs are fetched, or file:// URLs of a local mirror (`hypvl.data.mirror`) where one is
configured. Written on urllib (the standard library's): what it lacks here is the scheme rule, added as a redirect
handler.
"""

import http.client
import os
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from hypvl.errors import InputError
from hypvl.io import link_or_copy
from hypvl.provenance import file_digest

CHUNK_SIZE = 1 << 20
TIMEOUT = 60.0  # seconds a connection, a TLS handshake or a read may stall before the attempt fails (and is retried)


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


def _download_to_part(url, part, opener, chunk_size):
    """Append the rest of `url` to `part`, asking for a Range from its current size; start over
    if the server ignores the Range."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    try:
        response = opener(urllib.request.Request(url, headers=headers))
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # nothing left beyond `offset`: the part is complete
            return
        raise InputError(f"{url}: HTTP {error.code} {error.reason}") from error
    with response:
        resumed = offset and _status(response) == 206
        expected = response.headers.get("Content-Length") if getattr(response, "headers", None) else None
        received = 0
        with open(part, "ab" if resumed else "wb") as handle:
            while chunk := response.read(chunk_size):
                handle.write(chunk)
                received += len(chunk)
        if expected is not None and received < int(expected):
            raise ConnectionError(f"connection closed after {received} of {expected} bytes")


def fetch_file(url, path, sha256=None, md5=None, opener=None, retries=2, chunk_size=CHUNK_SIZE, local=None,
               check=None):
    """Download `url` to `path` via `path`.part, resuming up to `retries` times after an
    interruption, or take it from `local`, a local mirror's copy of it (`hypvl.io.link_or_copy`: hard-linked where it
    can be); `check(part, path, url)` may refuse what came (an InputError; the part is then removed); verify
    sha256/md5 when given; return the file's sha256. An existing `path` is only verified."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return verify(path, url, path, sha256, md5)
    part = path.with_name(path.name + ".part")
    if local is not None:
        link_or_copy(local, part)
    else:
        _download_with_retries(url, part, opener or url_opener(), retries, chunk_size)
    if check is not None:
        try:
            check(part, path, url)
        except InputError:
            part.unlink()  # written just now, by this download
            raise
    digest = verify(part, url, path, sha256, md5)
    os.replace(part, path)
    return digest


def _download_with_retries(url, part, opener, retries, chunk_size):
    """`_download_to_part`, resumed up to `retries` times after an interruption; InputError once they are spent."""
    for attempt in range(retries + 1):
        try:
            return _download_to_part(url, part, opener, chunk_size)
        except (OSError, http.client.HTTPException) as error:
            if attempt == retries:
                kept = f"; {part} is kept to resume from" if part.exists() else ""
                raise InputError(f"{url}: download failed after {retries + 1} attempts ({error}){kept}") from None


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
