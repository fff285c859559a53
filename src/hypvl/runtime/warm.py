"""Warm start: one process imports torch and the model code once, and every `hypvl` job of a workflow run is forked
from it instead of paying that start-up again (about 5 CPU-s a job on a CPU: torch 2.3 s, torchvision's detection
ops pulling in torch._dynamo 1.8 s, open_clip and transformers the rest; a quarter of the smoke Table 1's CPU time).

`hypvl serve --socket PATH` (started by the workflow, see `workflows/common.smk`) imports, then listens on a Unix
socket. A `hypvl` command run with `HYPVL_WARM_SOCKET=PATH` in its environment connects, passes its arguments,
working directory, environment and standard streams (the descriptors themselves), and waits: the server forks a
child that takes them over, runs the command exactly as `hypvl` would (`hypvl.cli.run`), and reports its exit status,
which the client exits with. A signal to the client (Snakemake cancelling the job) is passed on to the child, and a
child whose client has gone away ends. With no server to reach, the command runs in its own process as before.

Only the server's own user is served: the socket is made readable by its owner alone, and a connection from another
user (SO_PEERCRED) is closed unserved and logged, whatever the folder's permissions. A request that is not one (no
descriptors, not JSON, the wrong fields) or does not arrive within REQUEST_TIMEOUT seconds ends its child with one
line in the server's log.

The server only imports: it starts no torch thread pool and touches no GPU, so a forked child is as fresh as a new
process, and its numbers are bitwise the same (the smoke regression runs this way). Written by hand because no kept
library forks a pre-imported Python process per command with the caller's streams (multiprocessing's forkserver
starts functions, not commands with their own descriptors and exit status).
"""

import json
import os
import signal
import socket
import struct
import sys
import threading

SOCKET_ENV = "HYPVL_WARM_SOCKET"
PRELOAD = ("torch", "hypvl.train.trainer", "hypvl.models.build", "hypvl.models.checkpoints",
           "hypvl.models.library_import", "hypvl.evaluate.zeroshot", "hypvl.evaluate.retrieval",
           "hypvl.evaluate.hierarchical")
_HEADER = struct.Struct("!I")  # the request's length
_STATUS = struct.Struct("!i")  # the child's pid, then its exit status
_CREDENTIALS = struct.Struct("3i")  # SO_PEERCRED: the peer's pid, uid and gid
REQUEST_TIMEOUT = 30.0  # seconds a client has to send its request once connected
MAX_REQUEST = 16 << 20  # bytes of a request (arguments, directory, environment)
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run_warm(argv: list[str]) -> int | None:
    """Run `argv` in a child of the warm server named by $HYPVL_WARM_SOCKET and return its exit status; None where
    there is no server to reach (the caller then runs the command itself)."""
    path = os.environ.get(SOCKET_ENV)
    if not path:
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(path)
    except OSError:
        client.close()
        return None
    request = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        socket.send_fds(client, [_HEADER.pack(len(request))], [0, 1, 2])
        client.sendall(request)
    except OSError:  # closed unserved (another user's server): said below
        pass
    pid = _read_int(client)
    if pid is None:
        print(f"hypvl: the warm process at {path} did not start the command (its log says why)", file=sys.stderr)
        return 1
    for number in FORWARDED:
        signal.signal(number, lambda received, _frame: os.kill(pid, received))
    status = _read_int(client)
    if status is None:
        print(f"hypvl: the command's process {pid} ended without an exit status (killed?)", file=sys.stderr)
        return 1
    return status


def _read_int(connection: socket.socket) -> int | None:
    """One big-endian int from the connection; None where it closed first."""
    data = b""
    while len(data) < _STATUS.size:
        try:
            chunk = connection.recv(_STATUS.size - len(data))
        except InterruptedError:
            continue
        except OSError:  # reset by the other end
            return None
        if not chunk:
            return None
        data += chunk
    return _STATUS.unpack(data)[0]


def _texts(items) -> bool:
    return all(isinstance(item, str) for item in items)


class BadRequest(Exception):
    """A connection that sent no well-formed request in time."""


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    """The request ({argv: [str], cwd: str, env: {str: str}}) and the client's three standard stream descriptors;
    BadRequest says what is wrong with anything else."""
    try:
        header, fds, _, _ = socket.recv_fds(connection, _HEADER.size, 3)
        if len(header) != _HEADER.size or len(fds) != 3:
            raise BadRequest(f"a request starts with its length and three descriptors (got {len(header)} bytes, "
                             f"{len(fds)} descriptors)")
        size, = _HEADER.unpack(header)
        if size > MAX_REQUEST:
            raise BadRequest(f"a request of {size} bytes (at most {MAX_REQUEST})")
        body = b""
        while len(body) < size:
            chunk = connection.recv(size - len(body))
            if not chunk:
                raise BadRequest("the client went away mid-request")
            body += chunk
        request = json.loads(body)
    except TimeoutError:
        raise BadRequest(f"no request within {REQUEST_TIMEOUT:g} s") from None
    except (OSError, ValueError) as exc:  # the socket, or JSON that does not parse
        raise BadRequest(f"unreadable request ({type(exc).__name__}: {exc})") from None
    if not (isinstance(request, dict) and isinstance(request.get("argv"), list) and _texts(request["argv"])
            and isinstance(request.get("cwd"), str) and isinstance(request.get("env"), dict)
            and _texts(request["env"]) and _texts(request["env"].values())):
        raise BadRequest("a request is {argv: [text], cwd: text, env: {text: text}}")
    return request, fds


def serve(path: str, run, keep: dict[str, str]) -> None:
    """Preload, listen on `path` and fork a child per request that runs `run(argv)` (hypvl.cli.run) in the client's
    environment plus `keep` (the CPU code path's variables, which torch's kernels read at their first call, not at
    import: hypvl.runtime.cpu); returns when the process that started the server has gone (a workflow killed outright
    leaves no server behind) or on SIGTERM."""
    for module in PRELOAD:
        __import__(module)
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)  # the socket is its owner's alone, whatever the caller's umask
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    listener.listen(64)
    listener.settimeout(0.5)
    print(f"warm server {os.getpid()} on {path}", file=sys.stderr, flush=True)
    try:
        while os.getppid() == parent:
            _reap()
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            if not _same_user(connection):
                connection.close()
                continue
            connection.settimeout(REQUEST_TIMEOUT)  # the request's time; the child waits on its client for ever after
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                listener.close()
                _child(connection, run, keep)
            connection.close()
    finally:
        listener.close()
        if os.path.exists(path):
            os.unlink(path)


def _same_user(connection: socket.socket) -> bool:
    """True when the peer of `connection` runs as this server's user (SO_PEERCRED); else False, logged."""
    pid, uid, _ = _CREDENTIALS.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size))
    if uid == os.getuid():
        return True
    print(f"refused a connection from process {pid} of user {uid} (this server serves user {os.getuid()} only)",
          file=sys.stderr, flush=True)
    return False


def _reap() -> None:
    """Collect the children that have ended (their CPU time then counts as this server's children's, and so as the
    workflow's)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _child(connection: socket.socket, run, keep: dict[str, str]) -> None:
    """Take over the client's directory, environment and streams, run its command, report the status, exit."""
    status = 1
    try:
        for number in (signal.SIGTERM, *FORWARDED):
            signal.signal(number, signal.SIG_DFL)
        try:
            request, fds = _receive(connection)
        except BadRequest as exc:
            print(f"{os.getpid()}: {exc}; connection closed", file=sys.stderr, flush=True)  # the server's log
            os._exit(2)
        connection.settimeout(None)
        commands = [part.split()[0] for part in " ".join(request["argv"]).split(" :: ") if part.strip()]
        print(f"{os.getpid()}: hypvl {' :: '.join(commands)}", file=sys.stderr, flush=True)  # the server's log
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"] | keep)
        connection.sendall(_STATUS.pack(os.getpid()))
        threading.Thread(target=_end_with_client, args=(connection,), daemon=True).start()
        try:
            status = run(request["argv"])
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 (the child must report and exit, whatever happened)
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:
                pass
        try:
            connection.sendall(_STATUS.pack(int(status)))
        finally:
            os._exit(int(status))


def _end_with_client(connection: socket.socket) -> None:
    """Wait for the client to close the connection (it sends nothing more) and end the child: a job whose client
    was killed outright must not run on unseen."""
    try:
        connection.recv(1)
    except OSError:
        pass
    os._exit(143)
