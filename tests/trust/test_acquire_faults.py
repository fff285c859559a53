"""Faults of issue 44 met while downloading, each served by a real HTTP server on a thread (never the network): a
partial file that links to a mirror's, two acquisitions of one folder at once, a server lying in its Content-Range,
and attempts that fail in a row. Each test reproduces the fault and asserts that no file the suite did not write is
changed, and that what is recorded is the final file's true digest."""

import hashlib
import http.server
import logging
import os
import random
import socket
import threading
import time
import types
import urllib.error
import urllib.request

import pytest

from hypvl.acquire import download
from hypvl.acquire.fetch import CHECKSUM_RECORD, fetch, read_checksum_record
from hypvl.acquire.download import fetch_file, url_opener
from hypvl.acquire.mirror import Mirror
from hypvl.errors import InputError

PAYLOAD = random.Random(44).randbytes(116_000)
HALF = 58_000
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves the server's `served` files as the server's `mode` says: `range` honours a Range (one past the end: a
    416 declaring the length); `ignore` sends the whole file (200); `whole_as_resumed` sends the whole file as a 206
    declaring the range asked for; `from_zero` a 206 of the whole file declared as such; `elsewhere` a 206 from
    another byte than asked. The first `fail` requests get a 503; the body goes in four pieces `delay` seconds
    apart."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        server = self.server
        asked = self.headers.get("Range")
        server.ranges.append(asked)
        if server.fail:
            server.fail -= 1
            self.send_error(503, "Service Unavailable")
            return
        data = server.served[self.path]
        offset = int(asked.removeprefix("bytes=").rstrip("-")) if asked else 0
        if offset >= len(data) and server.mode == "range":
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start, declared = {"range": (offset, offset), "ignore": (0, None), "whole_as_resumed": (0, offset),
                           "from_zero": (0, 0), "elsewhere": (offset // 2, offset // 2)}[server.mode]
        if not asked:
            start, declared = 0, None
        self.send_response(200 if declared is None else 206)
        if declared is not None:
            self.send_header("Content-Range", f"bytes {declared}-{len(data) - 1}/{len(data)}")
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        quarter = len(body) // 4 + 1
        for begin in range(0, len(body), quarter):
            self.wfile.write(body[begin:begin + quarter])
            self.wfile.flush()
            time.sleep(server.delay)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    """A local HTTP server on a thread serving /payload.bin (PAYLOAD), its `mode`, `fail`, `delay` settable and the
    Range of each request in `ranges`."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.served, httpd.mode, httpd.fail, httpd.delay, httpd.ranges = {"/payload.bin": PAYLOAD}, "range", 0, 0.0, []
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/payload.bin"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()


def sources(url):
    """A manifest of one file nobody publishes a checksum for: its first fetch's digest becomes the reference."""
    return {"x": {"files": [{"url": url, "path": "payload.bin", "sha256": None}]}}


def acquire(server, dest, **options):
    return fetch("x", dest, opener=url_opener(("http",)), sources=sources(server.url), backoff=0, **options)


@pytest.mark.parametrize("mode", ["ignore", "range"])
def test_a_partial_file_linked_to_a_mirrors_file_is_never_written_through(server, tmp_path, mode):
    """A mirror fetch killed while it hashed left `.part` as a hard link to the mirror's file: a later fetch from a
    server (ignoring the Range, or honouring it) removes that name and downloads into a file of its own; the mirror's
    file keeps every byte."""
    mirrored = tmp_path / "mirror" / "payload.bin"
    mirrored.parent.mkdir()
    mirrored.write_bytes(b"the mirror's own, much larger file" * 1000)
    before = mirrored.read_bytes()
    dest = tmp_path / "dest"
    dest.mkdir()
    os.link(mirrored, dest / "payload.bin.part")  # what a killed mirror fetch left
    server.mode = mode
    [path] = acquire(server, dest)
    assert mirrored.read_bytes() == before and mirrored.stat().st_nlink == 1
    assert path.read_bytes() == PAYLOAD and read_checksum_record(dest) == {"payload.bin": DIGEST}


def test_a_partial_file_that_is_a_symlink_is_never_written_through(server, tmp_path):
    """A symlink at `.part` (to a user's file) is removed, not followed: its target keeps its bytes."""
    target = tmp_path / "notes.txt"
    target.write_bytes(b"a user's notes")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "payload.bin.part").symlink_to(target)
    [path] = acquire(server, dest)
    assert target.read_bytes() == b"a user's notes" and path.read_bytes() == PAYLOAD


def test_a_mirror_fetch_killed_while_hashing_leaves_no_link_a_download_writes(server, tmp_path, monkeypatch):
    """A mirror fetch interrupted while it verifies leaves its link only under a name no download opens, which the next
    fetch removes."""
    mirror = Mirror(tmp_path / "mirror")
    url = "https://files.example.org/payload.bin"
    mirror.path(url).parent.mkdir(parents=True)
    mirror.path(url).write_bytes(PAYLOAD)
    dest = tmp_path / "dest"

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(download, "file_digest", killed)
        with pytest.raises(KeyboardInterrupt):
            fetch("x", dest, sources=sources(url), mirror=mirror)
    assert not (dest / "payload.bin.part").exists()
    server.mode = "ignore"
    [path] = acquire(server, dest)
    assert mirror.path(url).read_bytes() == PAYLOAD and path.read_bytes() == PAYLOAD
    assert sorted(p.name for p in dest.iterdir()) == [CHECKSUM_RECORD, "payload.bin"]


def test_two_acquisitions_of_one_folder_take_turns(server, tmp_path, caplog):
    """Two acquisitions of one dataset started together (a killed one's half file there): the second waits for the
    first, said in one line, then verifies its file; the file and its recorded sha256 are the true ones."""
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "payload.bin.part").write_bytes(PAYLOAD[:HALF])
    server.delay = 0.1
    start, results = threading.Barrier(2), []

    def one():
        start.wait()
        try:
            results.append(acquire(server, dest, retries=0))
        except BaseException as error:  # noqa: BLE001 (reported below)
            results.append(error)

    with caplog.at_level(logging.WARNING, logger="hypvl"):
        threads = [threading.Thread(target=one) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert results == [[dest / "payload.bin"]] * 2
    assert (dest / "payload.bin").read_bytes() == PAYLOAD and read_checksum_record(dest) == {"payload.bin": DIGEST}
    assert server.ranges == [f"bytes={HALF}-"]  # one download; the second found the file
    assert sum("another acquisition is writing into" in r.getMessage() for r in caplog.records) == 1
    assert sorted(p.name for p in dest.iterdir()) == [CHECKSUM_RECORD, "payload.bin"]  # the lock file gone


@pytest.mark.parametrize("mode", ["whole_as_resumed", "from_zero", "elsewhere"])
def test_a_resumed_answer_that_does_not_continue_the_part_is_not_appended(server, tmp_path, mode):
    """A server answering a resumed request with a wrong Content-Range (the whole file as the rest, the whole file from
    byte 0, or bytes from elsewhere): the file is downloaded from zero, never spliced, and its true sha256 recorded."""
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "payload.bin.part").write_bytes(PAYLOAD[:HALF])
    server.mode = mode
    [path] = acquire(server, dest)
    assert path.read_bytes() == PAYLOAD and read_checksum_record(dest) == {"payload.bin": DIGEST}
    assert server.ranges[0] == f"bytes={HALF}-"


def test_a_part_longer_than_the_servers_file_is_not_taken_as_complete(server, tmp_path):
    """A part longer than the file (a 416 declaring the file's length): downloaded from zero, not renamed into place
    as it is."""
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "payload.bin.part").write_bytes(PAYLOAD + b"bytes of something else")
    [path] = acquire(server, dest)
    assert path.read_bytes() == PAYLOAD and read_checksum_record(dest) == {"payload.bin": DIGEST}
    assert server.ranges == [f"bytes={len(PAYLOAD) + 23}-", None]


def test_a_file_that_outgrows_its_declared_length_is_not_kept(server, tmp_path):
    """With no retry left, a part that outgrew the server's declared length is deleted (not kept to resume) and
    nothing is recorded."""
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "payload.bin.part").write_bytes(PAYLOAD[:HALF])
    server.mode = "whole_as_resumed"
    with pytest.raises(InputError, match=r"payload\.bin: download failed after 1 attempts \(the file came to 174000 "
                                         r"bytes, over the 116000 the server declared"):
        acquire(server, dest, retries=0)
    assert list(dest.iterdir()) == []


def test_failed_attempts_back_off_exponentially(server, tmp_path, monkeypatch):
    """Attempts that fail (here a 503, retried as transient) are repeated after `backoff` seconds, then twice as long
    each time; the download then completes."""
    slept = []
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=slept.append))  # the server's own sleeps apart
    server.fail = 3
    digest = fetch_file(server.url, tmp_path / "payload.bin", opener=url_opener(("http",)), retries=3, backoff=0.25)
    assert digest == DIGEST and slept == [0.25, 0.5, 1.0] and len(server.ranges) == 4
    assert download.BACKOFF > 0  # the default: not immediate


def test_a_final_answer_is_not_retried(tmp_path, monkeypatch):
    """A 404, or a host name that does not exist, is the answer, not a hiccup: one attempt, no wait, one line; a
    resolver that could not be asked (EAI_AGAIN) is retried."""
    slept = []
    monkeypatch.setattr(download, "time", types.SimpleNamespace(sleep=slept.append))

    def not_found(request):
        raise urllib.error.HTTPError(request.full_url, 404, "Not Found", {}, None)

    def resolver(code):
        def answer(request):
            raise urllib.error.URLError(socket.gaierror(code, "resolver says no"))
        return answer

    with pytest.raises(InputError, match=r"a\.bin: HTTP 404 Not Found"):
        fetch_file("https://example.invalid/a.bin", tmp_path / "a.bin", opener=not_found, retries=3)
    with pytest.raises(InputError, match=r"a\.bin: download failed \(.*resolver says no.*\): no such host, not "
                                         "retried"):
        fetch_file("https://example.invalid/a.bin", tmp_path / "a.bin", opener=resolver(socket.EAI_NONAME), retries=3)
    assert slept == []
    with pytest.raises(InputError, match=r"a\.bin: download failed after 4 attempts"):
        fetch_file("https://example.invalid/a.bin", tmp_path / "a.bin", opener=resolver(socket.EAI_AGAIN), retries=3,
                   backoff=1)
    assert slept == [1, 2, 4]


def test_a_file_changed_while_it_was_verified_is_neither_kept_nor_recorded(server, tmp_path, monkeypatch):
    """Another writer appending to the file while it is hashed: the file is removed, nothing recorded, one line."""
    digest = download.file_digest

    def hashed_while_written(path, *args):
        value = digest(path, *args)
        with open(path, "ab") as handle:  # another process writing the same file
            handle.write(b"more")
        return value

    monkeypatch.setattr(download, "file_digest", hashed_while_written)
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match=r"payload\.bin \(from .*\): changed while it was verified"):
        acquire(server, dest)
    assert not (dest / "payload.bin").exists() and read_checksum_record(dest) == {}

