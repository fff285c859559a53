"""The container: under `--sdm apptainer` every rule runs in the configured image, the checkout bound at its path, and
no job is forked from a warm server. No Apptainer can be installed here (not in this machine's package sources), so
Snakemake meets a stand-in `apptainer` on PATH that gives a version and records, then refuses, anything else: what
Snakemake plans and hands to Apptainer is Snakemake's own."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

BIN = Path(sys.executable).parent
STAND_IN = """#!/bin/sh
[ "$1" = --version ] && { echo "apptainer version 1.3.6"; exit 0; }
echo "$@" >> "$APPTAINER_CALLS"
exit 1
"""


@pytest.fixture
def apptainer(tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "apptainer").write_text(STAND_IN)
    (folder / "apptainer").chmod(0o755)
    calls = tmp_path / "apptainer_calls.txt"
    env = {**os.environ, "PATH": f"{folder}:{BIN}:{os.environ['PATH']}", "PYTHONPATH": str(REPO / "src"),
           "APPTAINER_CALLS": str(calls)}
    return env, calls


def test_every_rule_is_planned_in_the_image(tmp_path, apptainer):
    """A second workflow uses ours as a module and lists each rule's image; the dry run of the main job plans with
    them."""
    env, _ = apptainer
    (tmp_path / "Snakefile").write_text(
        "import json, sys\n"
        'config["container"] = "docker://example.org/hypvl:test"\n\n'
        f'module hypvl:\n    snakefile: "{REPO}/Snakefile"\n    config: config\n\n'
        "use rule * from hypvl as hypvl_*\n\n"
        'print("IMAGES", json.dumps({rule.name: rule.container_img for rule in workflow.rules}), file=sys.stderr)\n')
    run = subprocess.run([str(BIN / "snakemake"), "-n", "--sdm", "apptainer", "--cores", "2", "reports/table1.md"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(line for line in run.stderr.splitlines() if line.startswith("IMAGES "))
    images = json.loads(line.removeprefix("IMAGES "))
    assert {"hypvl_train", "hypvl_compare", "hypvl_ground", "hypvl_flagship_report"} <= set(images)
    assert set(images.values()) == {"docker://example.org/hypvl:test"}
    assert "Singularity image docker://example.org/hypvl:test will be pulled" in run.stderr + run.stdout


def test_a_job_runs_in_the_image_with_the_checkout_bound_and_no_warm_server(tmp_path, apptainer):
    env, calls = apptainer
    image = tmp_path / "hypvl.sif"
    image.write_bytes(b"")  # a local image is used where it is, never pulled
    run = subprocess.run([str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "--sdm", "apptainer", "--cores", "1",
                          "data/smoke/manifest.json", "--config", f"container={image}"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode != 0  # the stand-in refuses to run the job
    (call,) = calls.read_text().splitlines()
    assert call.startswith("exec --home") and f"--bind {shlex.quote(str(REPO))} " in call
    assert f" {image} " in call and "hypvl synthesize" in call and "--only evaluation" in call
    assert not (tmp_path / "results" / "smoke" / "logs" / "warm_server.log").exists()
