"""Wall time of `hypvl coverage` in a fresh process (planning, every spec, the metric JSONs present), and whether it
imported torch.

    python benchmarks/coverage_time.py [--metrics-dir results/smoke/metrics]
"""

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# runs `hypvl coverage` in this process and prints whether torch (or timm, open_clip) was imported
PROBE = ("import sys; from hypvl.cli import main; "
         "code = main(['coverage', '--scale', 'smoke', '--metrics-dir', {!r}, '--out', {!r}]); "
         "print(sorted(m for m in ('torch', 'timm', 'open_clip') if m in sys.modules)); sys.exit(code)")


def measure(metrics_dir: Path, out: Path, repeats: int = 3) -> dict:
    """Best wall and CPU seconds of `repeats` runs (CPU time hardly depends on the machine's load), the cells counted
    and the heavy modules the command imported."""
    seconds, cpu = [], []
    for _ in range(repeats):
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        run = subprocess.run([sys.executable, "-c", PROBE.format(str(metrics_dir), str(out))], cwd=REPO,
                             capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds.append(time.perf_counter() - start)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    totals = next(line for line in out.read_text().splitlines() if line.startswith("**All tables**"))
    return {"seconds": min(seconds), "cpu_s": min(cpu), "imported": run.stdout.strip().splitlines()[-1],
            "cells": totals}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics-dir", type=Path, default=REPO / "results" / "smoke" / "metrics")
    parser.add_argument("--out", type=Path, default=Path("/tmp/hypvl-coverage.md"))
    print(measure(**vars(parser.parse_args())))


if __name__ == "__main__":
    main()
