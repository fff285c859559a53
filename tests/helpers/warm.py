"""The warm server's stand-in command and a client of it."""

import os
import subprocess
import sys
import time


# a stand-in for hypvl.cli.run: reports what it was given; `sleep` waits to be signalled
FAKE_RUN = """
import os, sys, time
from pathlib import Path
from hypvl.runtime import warm

def run(argv):
    Path("pid.tmp").write_text(str(os.getpid()))
    os.replace("pid.tmp", "pid")  # whole, for the test polling for it
    if argv[0] == "sleep":
        time.sleep(60)
    print("out", argv, Path.cwd().name, os.environ.get("PROBE"), os.environ.get("ATEN_CPU_CAPABILITY"))
    print("err", file=sys.stderr)
    return int(argv[1])

warm.serve(sys.argv[1], run, {"ATEN_CPU_CAPABILITY": "avx2"})
"""


def wait_for(condition, seconds=60.0):
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def client(socket_path, cwd, *argv, **popen):
    env = {**os.environ, "HYPVL_WARM_SOCKET": str(socket_path), "PROBE": "from the caller"}
    code = "import sys; from hypvl.runtime.warm import run_warm; sys.exit(run_warm(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=cwd, env=env, **popen)
