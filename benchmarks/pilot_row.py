"""The pilot row target (tests/workflow/test_pilot.py's HyCoCLIP Table 1 row, the ViT-S GRIT HyCoCLIP) from nothing, timed
per job: what benchmarks/gpu runs on a GPU (`--pilot-row`), and a CPU can run too.

Everything (the pilot world, its mirror, results) lives in a fresh temporary folder; the workflow runs with
full.yaml and pilot.yaml, `--cores` as given. Job times come from Snakemake's log (its timestamps are whole
seconds: the start line a job is announced under, the line it is finished under).

    python benchmarks/pilot_row.py --cores 2
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ROW = ("hycoclip", "table1", "grit_vits_hycoclip")
PILOT = ["workflows/config/full.yaml", "workflows/config/pilot.yaml"]
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
STARTED = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")


def job_seconds(log: str) -> list[dict]:
    """[{rule, jobid, seconds}] of each finished job in a Snakemake log, in the order they finished."""
    now, begun, announced, done = None, {}, None, []
    for line in log.splitlines():
        if stamp := STAMP.match(line):
            now = datetime.strptime(" ".join(stamp.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif started := STARTED.match(line):
            announced = (started.group(1), now)
        elif (jobid := JOBID.match(line)) and announced:
            begun[jobid.group(1)], announced = announced, None
        elif finished := FINISHED.match(line):
            rule, start = begun.pop(finished.group(1), (finished.group(2), now))
            done.append({"rule": rule, "jobid": int(finished.group(1)), "seconds": (now - start).total_seconds()})
    return done


def per_rule(jobs: list[dict]) -> dict[str, dict]:
    """rule -> {jobs, total_s, max_s}."""
    rules: dict[str, dict] = {}
    for job in jobs:
        entry = rules.setdefault(job["rule"], {"jobs": 0, "total_s": 0.0, "max_s": 0.0})
        entry["jobs"] += 1
        entry["total_s"] += job["seconds"]
        entry["max_s"] = max(entry["max_s"], job["seconds"])
    return rules


def snakemake_command() -> str:
    """The snakemake beside this Python, else the one on PATH."""
    beside = Path(sys.executable).parent / "snakemake"
    found = str(beside) if beside.exists() else shutil.which("snakemake")
    if found is None:
        raise FileNotFoundError("snakemake is not installed (pip install '.[workflow]')")
    return found


def run_pilot_row(cores: int, timeout_s: float) -> dict:
    """Run the row target from nothing in a temporary folder: wall seconds, exit status, job times and their sums
    per rule, the log's tail on a failure."""
    with tempfile.TemporaryDirectory(prefix="hypvl-pilot-row-") as tmp:
        root = Path(tmp)
        paths = root / "paths.yaml"
        paths.write_text(yaml.safe_dump({
            "data_dir": str(root / "data"), "results_dir": str(root / "results"),
            "reports_dir": str(root / "reports"),
            "fetch": {"mirror": str(root / "data" / "mirror"), "sources": str(root / "data" / "mirror" / "sources.yaml"),
                      "weights": None}}))
        target = root / "results" / "rows" / ROW[0] / ROW[1] / f"{ROW[2]}.csv"
        command = [snakemake_command(), str(target), "--cores", str(cores), "--configfile", *PILOT, str(paths)]
        start = time.perf_counter()
        try:
            run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
            status, log = run.returncode, run.stdout + run.stderr
        except subprocess.TimeoutExpired as exc:
            status, log = "timeout", (exc.stdout or b"").decode() + (exc.stderr or b"").decode()
        jobs = job_seconds(log)
        result = {"target": "/".join(ROW), "cores": cores, "wall_s": time.perf_counter() - start, "status": status,
                  "jobs": jobs, "rules": per_rule(jobs)}
        if status != 0:
            result["log_tail"] = log[-3000:]
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=1200.0)
    args = parser.parse_args()
    print(json.dumps(run_pilot_row(args.cores, args.timeout_s), indent=1))


if __name__ == "__main__":
    main()
