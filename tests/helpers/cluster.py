"""Dry runs of the workflow through the cluster profiles and the jobs they plan."""

import re
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import REPO


FULL = REPO / "workflows" / "config" / "full.yaml"


def dry_run(tmp_path, target: str, *options: str, configs=()) -> str:
    """stdout + stderr of `snakemake -n -p` at paper scale (full.yaml, then `configs`), with data, results and
    reports under tmp_path."""
    paths = tmp_path / "paths.yaml"
    paths.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results"),
                                     "reports_dir": str(tmp_path / "reports")}))
    exe = Path(sys.executable).parent / "snakemake"
    run = subprocess.run([str(exe), target.format(tmp=tmp_path), "-n", "-p", *options, "--configfile", str(FULL),
                          str(paths), *map(str, configs)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    return run.stdout + run.stderr


def jobs(output: str) -> list[dict]:
    """Each planned job of a dry run: rule, wildcards, input, resources (name -> value), priority, threads and shell
    command."""
    found = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        rule = re.match(r"(?:local)?rule (\w+):", block)
        if rule is None:
            continue
        fields = dict(re.findall(r"^    (\w+): (.*)$", block, flags=re.M))
        resources = dict(item.split("=", 1) for item in fields.get("resources", "").split(", ") if "=" in item)
        shell = re.search(r"^Shell command: (.*)$", block, flags=re.M)
        found.append({"rule": rule.group(1), "wildcards": fields.get("wildcards", ""),
                      "input": fields.get("input", ""), "resources": resources,
                      "priority": float(fields.get("priority", 0)), "threads": int(fields.get("threads", 1)),
                      "shell": shell.group(1) if shell else ""})
    return found


def job_of(planned: list[dict], rule: str, wildcards: str) -> dict:
    [job] = [j for j in planned if j["rule"] == rule and j["wildcards"] == wildcards]
    return job
