"""Wall time of a workflow target from nothing (cold), again with nothing to do (no-op), and its dry run.

The target runs with the default config, its data, results and reports in a fresh temporary folder (as on a
fresh clone), `--cores all`. Afterwards the peak memory of one training job (which also evaluates zero-shot in
its process) and of one evaluation job is measured by rerunning each command alone on the run's data.

    python benchmarks/workflow_time.py --target table1.md
"""

import argparse
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
HYPVL = str(Path(sys.executable).parent / "hypvl")


def timed_run(command: list[str], cwd: Path = REPO) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return time.perf_counter() - start, run


def peak_rss_mb(command: list[str]) -> float:
    """Peak resident memory (MB) of one command run alone (its own process, waited for with wait4)."""
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{shlex.join(command)} failed: {process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024


def job_counts(output: str) -> dict[str, int]:
    stats = output.split("Job stats:")[1].split("total")[0]
    return {job: int(count) for job, count in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M)}


def measure(target: str, folder: Path, experiment: str = "hyco_clip_vits_grit") -> dict:
    """Cold, no-op and dry-run seconds of `target` (a path under reports/) with everything under `folder`, plus
    the peak memory of training `experiment` and of its zero-shot evaluation."""
    config = folder / "paths.json"
    config.write_text(json.dumps({"data_dir": str(folder / "data"), "results_dir": str(folder / "results"),
                                  "reports_dir": str(folder / "reports")}))
    goal = str(folder / "reports" / target)
    base = [SNAKEMAKE, goal, "--cores", "all", "--configfile", str(config)]
    dry_cold, planned = timed_run([*base, "-n"])
    load = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cold, _ = timed_run(base)
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    noop, again = timed_run(base)
    dry_done, _ = timed_run([*base, "-n"])
    if "Nothing to be done" not in again.stdout + again.stderr:
        raise RuntimeError(f"a second run of {target} did work:\n{again.stderr[-2000:]}")
    print(f"{target}: cold {cold:.0f} s, no-op {noop:.1f} s, dry run {dry_cold:.1f} s / {dry_done:.1f} s",
          file=sys.stderr, flush=True)
    cfg = json.dumps({"data_dir": str(folder / "data")})
    model = folder / "models" / experiment
    train = [HYPVL, "train", "--spec", "replication/hycoclip.yaml", "--experiment", experiment, "--config-json", cfg,
             "--out", str(model), "--quiet"]
    evaluate = ["evaluate", "zeroshot", "--experiment", experiment, "--checkpoint",
                str(model / "checkpoint.pt"), "--config-json", cfg, "--out-dir", str(folder / "metrics")]
    train_mb = peak_rss_mb([*train, "::", *evaluate])
    eval_mb = peak_rss_mb([HYPVL, *evaluate])
    return {"target": target, "jobs": job_counts(planned.stdout), "cold_s": cold, "noop_s": noop,
            "dry_run_cold_s": dry_cold, "dry_run_done_s": dry_done,
            "cpu_s": (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime),
            "load_before": load, "train_peak_mb": train_mb, "eval_peak_mb": eval_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="table1.md", help="a report under reports/ (default: table1.md)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(args.target, Path(tmp))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
