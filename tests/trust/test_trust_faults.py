"""Faults of issue 23 met on the way in: a server that redirects to another scheme or stalls (after its headers, in the
TLS handshake), a warm server reached by another user or sent garbage or nothing, a full or read-only disk, and an
input deleted mid-run. Each test reproduces the fault and asserts what the suite does: refuses in one line, bounded
in time, and writes nothing."""


import errno
import http.server
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import REPO
from helpers.format_fixtures import BUILDERS
from helpers.trust import evaluate_argv, one_line
from helpers.warm import FAKE_RUN, client, wait_for
from hypvl.cli import main
from hypvl.acquire.download import SameSchemeRedirects, fetch_file, url_opener
from hypvl.data.formats.clip_benchmark_wds import index_clip_benchmark_split
from hypvl.errors import InputError
from hypvl.io import atomic_write

# --------------------------------------------------------------------------- network


class _Server(http.server.BaseHTTPRequestHandler):
    """/redirect: 302 to the same path over https; /stall: headers promising 100 bytes, then silence."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", f"https://{self.headers['Host']}/payload")
            self.end_headers()
        else:
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.flush()
            time.sleep(5)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    """http://127.0.0.1:<port> served by _Server on a thread."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_an_https_download_redirected_to_http_is_refused():
    """A redirect from https to http is refused, naming both URLs, before anything is fetched in the clear."""
    request = urllib.request.Request("https://example.invalid/data.zip")
    with pytest.raises(InputError, match=r"data\.zip: redirected \(302\) to http://example\.invalid/data\.zip, "
                                         r"from https to http: refused"):
        SameSchemeRedirects().redirect_request(request, None, 302, "Found", {}, "http://example.invalid/data.zip")


def test_a_server_redirecting_to_another_scheme_gets_nothing_written(http_server, tmp_path):
    """A real server's redirect to another scheme ends the download at once (no retry), and no file is left."""
    with pytest.raises(InputError, match="from http to https: refused"):
        fetch_file(f"{http_server}/redirect", tmp_path / "a", opener=url_opener(("http",)), retries=2)
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_stalls_after_its_headers_fails_after_the_retries(http_server, tmp_path):
    """A server that sends its headers and then nothing: each attempt times out, and after the retry limit the
    download fails in one line, the part kept to resume from."""
    with pytest.raises(InputError, match=r"stall: download failed after 2 attempts \(timed out\)"):
        fetch_file(f"{http_server}/stall", tmp_path / "a", opener=url_opener(("http",), timeout=0.3), retries=1,
                   backoff=0.01)
    assert not (tmp_path / "a").exists()


def test_a_tls_handshake_that_never_completes_times_out(tmp_path):
    """An https server that accepts the connection and never answers the handshake: the attempts time out."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/a"
        with pytest.raises(InputError, match="download failed after 2 attempts"):
            fetch_file(url, tmp_path / "a", opener=url_opener(timeout=0.3), retries=1, backoff=0.01)
    finally:
        listener.close()


def test_only_https_is_fetched_and_file_urls_only_from_a_mirror(tmp_path):
    """The default opener refuses a file:// URL (and plain http); the mirror's opener reads file:// only."""
    secret = tmp_path / "secret"
    secret.write_text("not for the manifest")
    for url in (secret.as_uri(), "http://example.invalid/a"):
        with pytest.raises(InputError, match="only https URLs are"):
            url_opener()(urllib.request.Request(url))
    with url_opener(("file",))(urllib.request.Request(secret.as_uri())) as response:
        assert response.read() == b"not for the manifest"


# --------------------------------------------------------------------------- the warm server


@pytest.fixture
def warm_server():
    """start(serve_as) -> (socket, log) of a warm server running tests/helpers/warm.py's FAKE_RUN that waits 1 s for a
    request, and believes it runs as another user than the tests' where `serve_as` is 'other' ('self': as theirs)."""
    started = []

    def start(serve_as: str):
        folder = Path(tempfile.mkdtemp(prefix="hypvl-test-"))
        socket_path, log = folder / "s", folder / "log"
        patch = "import os\nfrom hypvl.runtime import warm\nwarm.REQUEST_TIMEOUT = 1.0\n"
        if serve_as == "other":  # the server's user is not the caller's
            patch += "_uid = os.getuid()\nos.getuid = lambda: _uid + 1\n"
        with open(log, "w") as handle:
            process = subprocess.Popen([sys.executable, "-c", patch + FAKE_RUN, str(socket_path)], stdout=handle,
                                       stderr=handle)
        started.append((process, folder))
        wait_for(socket_path.exists)
        return socket_path, log

    yield start
    for process, folder in started:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


# what another user would send, with the standard library alone (hypvl's environment may be out of its reach)
ATTACKER = """
import json, socket, struct, sys
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.connect(sys.argv[1])
request = json.dumps({"argv": ["job", "0"], "cwd": sys.argv[2], "env": {}}).encode()
try:
    socket.send_fds(connection, [struct.pack("!I", len(request))], [0, 1, 2])
    connection.sendall(request)
    print("served" if connection.recv(4) else "no child")
except OSError:  # reset: closed unread
    print("no child")
"""


def test_a_connection_from_another_user_is_refused_unserved(warm_server, tmp_path):
    """A client whose user is not the server's (SO_PEERCRED) gets no child: its command never runs, and the server
    logs one line; the socket is its owner's alone whatever the umask."""
    socket_path, log = warm_server("other")
    assert oct(socket_path.stat().st_mode & 0o777) == "0o600"
    done = client(socket_path, tmp_path, "job", "0", stderr=subprocess.PIPE, text=True)
    assert done.wait(timeout=60) == 1 and "did not start the command" in done.stderr.read()
    assert not (tmp_path / "pid").exists()
    wait_for(lambda: "refused a connection" in log.read_text())
    assert re.search(r"refused a connection from process \d+ of user \d+ \(this server serves user \d+ only\)",
                     log.read_text())


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("python3", path="/usr/bin:/bin"),
                    reason="needs root (to connect as another user) and a system python3")
def test_user_nobody_cannot_run_a_command_of_a_root_server(warm_server, tmp_path):
    """As the issue tried it: a root server whose socket anyone may open (chmod 777, as under umask 000); user
    nobody's command is refused and writes nothing."""
    socket_path, log = warm_server("self")
    os.chmod(socket_path.parent, 0o755)
    os.chmod(socket_path, 0o777)
    os.chmod(tmp_path, 0o777)
    done = subprocess.run(["/usr/bin/env", "-i", shutil.which("python3", path="/usr/bin:/bin"), "-c", ATTACKER,
                           str(socket_path), str(tmp_path)], capture_output=True, text=True, timeout=60, user=65534)
    assert done.stdout.strip() == "no child" and not (tmp_path / "pid").exists(), done.stderr
    wait_for(lambda: "refused a connection" in log.read_text())


def test_malformed_requests_and_silent_connections_end_their_child_in_one_line(warm_server):
    """Garbage, a request without descriptors, JSON of the wrong shape, and a connection that sends nothing: each
    child logs one line and ends; no traceback in the server's log."""
    socket_path, log = warm_server("self")
    header = struct.Struct("!I")
    sent = []
    for payload, descriptors in ((b"\xff" * 9, False), (header.pack(2) + b"{}", False),
                                 (b"[1, 2]", True), (b"", True)):
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(socket_path))
        if descriptors:
            socket.send_fds(connection, [header.pack(len(payload))], [0, 1, 2])
        connection.sendall(payload)
        sent.append(connection)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(socket_path))
    wait_for(lambda: log.read_text().count("connection closed") == 5, 30)
    text = log.read_text()
    assert "Traceback" not in text
    assert "a request is {argv: [text], cwd: text, env: {text: text}}" in text
    assert "no request within 1 s" in text and "three descriptors" in text
    for pid in re.findall(r"(\d+): .*connection closed", text):
        wait_for(lambda pid=int(pid): not Path(f"/proc/{pid}").exists() or
                 Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", 20)
    for connection in (*sent, silent):
        connection.close()


# --------------------------------------------------------------------------- disks and deleted inputs


def test_a_full_disk_is_said_in_one_line_before_the_evaluation(tmp_path, capsys, monkeypatch):
    """The results disk takes no more: the evaluation refuses before it loads a model, in one line."""
    import hypvl.io
    import hypvl.models.checkpoints

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.chdir(REPO)
    argv = evaluate_argv(tmp_path, tmp_path / "metrics")
    monkeypatch.setattr(hypvl.io.tempfile, "TemporaryFile", full)
    monkeypatch.setattr(hypvl.models.checkpoints, "load_checkpoint", lambda *a: pytest.fail("the model was loaded"))
    assert main(argv) == 1
    assert one_line(capsys) == f"hypvl evaluate: {tmp_path / 'metrics'}: cannot write (No space left on device); " \
                               "nothing was changed there"


@pytest.mark.skipif(not Path("/sys").is_dir() or os.access("/sys", os.W_OK) and os.geteuid() != 0,
                    reason="needs a read-only file system at /sys")
def test_a_read_only_results_folder_is_said_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(evaluate_argv(tmp_path, Path("/sys/hypvl-metrics"))) == 1
    assert re.fullmatch(r"hypvl evaluate: /sys/hypvl-metrics: cannot write \((Operation not permitted|Permission "
                        r"denied|Read-only file system)\); nothing was changed there", one_line(capsys))


def test_a_write_that_fills_the_disk_names_the_file_and_leaves_nothing(tmp_path):
    path = tmp_path / "out.json"
    with pytest.raises(InputError, match=re.escape(f"{path}: cannot write (No space left on device)")):
        with atomic_write(path) as handle:
            handle.write("partial")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_a_shard_deleted_after_it_was_indexed_is_named(tmp_path):
    root, _, _ = BUILDERS["clip_benchmark_wds"](tmp_path)
    records = index_clip_benchmark_split(root, "test")
    (root / "test" / "0.tar").unlink()
    with pytest.raises(InputError, match=r"0\.tar: record key \S+: the shard has gone since it was indexed"):
        records[0].image.read()


def test_an_input_deleted_while_a_step_runs_is_one_line(tmp_path, capsys, monkeypatch):
    """A step that finds a file gone mid-run (FileNotFoundError naming it) ends in one line, not a traceback."""
    import hypvl.data.probe_splits

    def gone(*args):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(tmp_path / "source" / "0.png"))

    monkeypatch.setattr(hypvl.data.probe_splits, "build_probe_splits", gone)
    assert main(["probe-splits", "cifar10", "--source", str(tmp_path), "--dest", str(tmp_path / "d")]) == 1
    assert one_line(capsys) == f"hypvl probe-splits: {tmp_path / 'source' / '0.png'}: no such file (deleted while " \
                               "the step ran?)"
