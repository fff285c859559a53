"""Determinism of a whole table: two cold runs of the workflow (data, grounding, training, evaluation, compare,
report, each in its own folder) give byte-identical reports apart from timestamps, and a row target gives the
lines of the full table's compare CSV for that row."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from helpers import REPO
from helpers.workflow import TINY

TABLE = "reports/poinclip/table3.md"  # two small models, COCO retrieval: 9 jobs from an empty folder
ROW = ("results/rows/poinclip/table3/vits_poincare.csv", "vits_poincare")
TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"
TIMESTAMP = re.compile(rf"{TIME}( to {TIME})?")  # a date, or a date range (one date when all fall in one second)


def workdir(folder: Path) -> Path:
    """An empty Snakemake working folder (its own .snakemake) with the tiny config; no zero-shot in training jobs."""
    folder.mkdir()
    config = {**TINY, "evaluate_with_training": [], "data_dir": str(folder / "data"),
              "results_dir": str(folder / "results"), "reports_dir": str(folder / "reports"),
              **{f"{key}_dir": str(REPO / key) for key in ("replication", "expected", "baselines")}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def run(folder: Path, target: str) -> None:
    command = [str(Path(sys.executable).parent / "snakemake"), "-s", str(REPO / "Snakefile"), "--directory",
               str(folder), str(folder / target), "--cores", "2", "--configfile", str(folder / "config.yaml")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def without_timestamps(path: Path) -> str:
    return TIMESTAMP.sub("<time>", path.read_text(encoding="utf-8"))


def test_two_cold_runs_give_the_same_report_and_a_row_target_the_full_tables_row(tmp_path):
    """Two cold runs give the same report and plot apart from timestamps, and a cold row target the full table's
    lines for that row. Both in the same folder (the config records its paths), from empty: the table; then the row
    alone, and the table, which runs only the other row's jobs."""
    folder = workdir(tmp_path / "run")
    run(folder, TABLE)
    first = tmp_path / "first"
    shutil.copytree(folder, first)
    shutil.rmtree(folder)
    workdir(folder)
    run(folder, ROW[0])
    run(folder, TABLE)
    report = without_timestamps(first / TABLE)
    assert report.count("<time>") >= 2 and "measured cells: 8 of 8" in report  # the dates are what differs
    assert without_timestamps(folder / TABLE) == report
    assert (folder / TABLE).with_suffix(".png").read_bytes() == (first / TABLE).with_suffix(".png").read_bytes()
    table = pd.read_csv(first / "results/tables/poinclip/table3.csv", dtype=str, keep_default_na=False)
    row = pd.read_csv(folder / ROW[0], dtype=str, keep_default_na=False)
    expected = table[table["row"] == ROW[1]].reset_index(drop=True)
    pd.testing.assert_frame_equal(row.drop(columns="date"), expected.drop(columns="date"))
