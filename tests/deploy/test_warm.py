"""Warm start (hypvl.runtime.warm): a command sent to the warm server runs in a child that has the caller's arguments,
directory, environment and streams, and the caller exits with its status; signals reach the child, a child whose
caller was killed outright ends, and with no server the command runs in its own process. The real `hypvl serve`
runs `hypvl` commands, keeps the CPU code path it loaded torch under, and a workflow run serves its jobs from one."""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.warm import FAKE_RUN, client, wait_for

HYPVL = str(Path(sys.executable).parent / "hypvl")


@pytest.fixture
def server():
    """(socket path, server log) of a warm server running FAKE_RUN; stopped afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="hypvl-test-"))
    socket_path, log = folder / "s", folder / "log"
    with open(log, "w") as handle:
        process = subprocess.Popen([sys.executable, "-c", FAKE_RUN, str(socket_path)], stdout=handle, stderr=handle)
    wait_for(socket_path.exists)
    yield socket_path, log
    process.terminate()
    process.wait(timeout=10)
    assert not socket_path.exists()  # the server removes its socket


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_command_runs_in_a_child_with_the_callers_directory_environment_and_streams(server, tmp_path):
    socket_path, log = server
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        done = client(socket_path, tmp_path, "job", "3", stdout=stdout, stderr=stderr)
        assert done.wait(timeout=60) == 3  # the command's status
    # its own directory and environment, the server's CPU code path kept over the caller's lack of one
    assert out.read_text() == f"out ['job', '3'] {tmp_path.name} from the caller avx2\n"
    assert err.read_text() == "err\n"
    child = int((tmp_path / "pid").read_text())
    assert child != done.pid and f"{child}: hypvl job" in log.read_text()


def test_a_signal_to_the_caller_ends_the_command(server, tmp_path):
    socket_path, _ = server
    waiting = client(socket_path, tmp_path, "sleep", "0", stderr=subprocess.PIPE, text=True)
    wait_for((tmp_path / "pid").exists)
    child = int((tmp_path / "pid").read_text())
    waiting.send_signal(signal.SIGTERM)
    assert waiting.wait(timeout=20) == 1
    assert "ended without an exit status" in waiting.stderr.read()
    wait_for(lambda: not alive(child), 20)


def test_a_command_whose_caller_was_killed_outright_ends(server, tmp_path):
    socket_path, _ = server
    waiting = client(socket_path, tmp_path, "sleep", "0")
    wait_for((tmp_path / "pid").exists)
    child = int((tmp_path / "pid").read_text())
    waiting.kill()
    waiting.wait(timeout=20)
    wait_for(lambda: not alive(child), 20)


def test_without_a_server_the_command_runs_in_its_own_process(tmp_path):
    env = {**os.environ, "HYPVL_WARM_SOCKET": str(tmp_path / "nothing_here")}
    done = subprocess.run([HYPVL, "train"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "the following arguments are required: --spec" in done.stderr


def test_hypvl_serve_runs_hypvl_commands_and_keeps_its_cpu_code_path(tmp_path):
    folder = Path(tempfile.mkdtemp(prefix="hypvl-test-"))
    socket_path, log = folder / "s", folder / "log"
    with open(log, "w") as handle:
        server = subprocess.Popen([HYPVL, "serve", "--socket", str(socket_path), "--code-path", "native"],
                                  stdout=handle, stderr=handle)
    try:
        wait_for(socket_path.exists, 120)
        env = {**os.environ, "HYPVL_WARM_SOCKET": str(socket_path)}
        usage = subprocess.run([HYPVL, "train"], env=env, capture_output=True, text=True, timeout=120)
        assert usage.returncode == 2 and "the following arguments are required: --spec" in usage.stderr
        other = subprocess.run([HYPVL, "train", "--spec", "x.yaml", "--experiment", "x", "--out", str(tmp_path),
                                "--config-json", json.dumps({"cpu_code_path": "avx2"})],
                               env=env, capture_output=True, text=True, timeout=120)
        assert other.returncode == 1
        assert "cpu_code_path 'avx2': this process loaded torch under 'native'" in other.stderr
        assert log.read_text().count(": hypvl train") == 2
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.slow
def test_a_workflow_run_serves_its_jobs_from_one_warm_server(tmp_path):
    """HyCoCLIP's CLIP on the tiny world: the training job (with its zero-shot evaluation) is forked from the run's
    server, whose log names it, and the server is gone when the run ends."""
    from helpers.dag import TARGET, run, workdir

    folder = workdir(tmp_path, "warm")
    run(folder)
    served = (folder / "results" / "logs" / "warm_server.log").read_text()
    assert ": hypvl train :: evaluate" in served and (folder / TARGET).is_file()
    server = int(re.search(r"warm server (\d+) on (\S+)", served).group(1))
    assert not alive(server) and not Path(re.search(r"warm server \d+ on (\S+)", served).group(1)).exists()
