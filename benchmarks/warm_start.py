"""Start-up of a `hypvl` job in its own process and forked from a warm server (hypvl.runtime.warm).

The job is `hypvl evaluate zeroshot` on a checkpoint that does not exist: it imports torch and the model code, then
stops on the missing file, so its time is the start-up every evaluation and training job pays. Median wall time of
several runs each way, alternating.

    python benchmarks/warm_start.py
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HYPVL = str(Path(sys.executable).parent / "hypvl")
JOB = [HYPVL, "evaluate", "zeroshot", "--experiment", "x", "--checkpoint", "missing.pt", "--out-dir", "out"]


def timed(env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(JOB, env=env, capture_output=True, text=True)
    if "missing.pt" not in done.stderr:
        raise RuntimeError(f"unexpected output: {done.stderr[-2000:]}")
    return time.perf_counter() - start


def measure(repeats: int = 5) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="hypvl-bench-"))
    socket_path = folder / "socket"
    server = subprocess.Popen([HYPVL, "serve", "--socket", str(socket_path), "--code-path", "avx2"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not socket_path.exists():
            time.sleep(0.05)
        cold_env = {key: value for key, value in os.environ.items() if key != "HYPVL_WARM_SOCKET"}
        warm_env = {**cold_env, "HYPVL_WARM_SOCKET": str(socket_path)}
        cold, warm = [], []
        for _ in range(repeats):
            cold.append(timed(cold_env))
            warm.append(timed(warm_env))
    finally:
        server.terminate()
        server.wait()
    return {"cold_s": statistics.median(cold), "warm_s": statistics.median(warm), "repeats": repeats}


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
