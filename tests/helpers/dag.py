"""A small workflow target run (and killed) in a folder of its own."""

import subprocess
import sys
from pathlib import Path

import yaml

from helpers import REPO
from helpers.workflow import TINY


TARGET = "results/models/meru_clip_vits/checkpoint.pt"  # synthesize, ground, train: 4 jobs, ~20 s on one core


def workdir(tmp_path: Path, name: str) -> Path:
    """A Snakemake working folder (its own .snakemake, so locks stay out of the repository) with the tiny config."""
    folder = tmp_path / name
    folder.mkdir()
    config = {**TINY, "data_dir": str(folder / "data"), "results_dir": str(folder / "results"),
              "reports_dir": str(folder / "reports"), **{f"{key}_dir": str(REPO / key)
                                                         for key in ("replication", "expected", "baselines")}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def command(folder: Path, *extra: str) -> list[str]:
    return [str(Path(sys.executable).parent / "snakemake"), "-s", str(REPO / "Snakefile"), "--directory",
            str(folder), str(folder / TARGET), "--cores", "1", "--configfile", str(folder / "config.yaml"), *extra]


def run(folder: Path, *extra: str) -> subprocess.CompletedProcess:
    done = subprocess.run(command(folder, *extra), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done
