"""The rule files stay formatted as Snakemake's own workflow template keeps them (issue 46): `snakefmt --check` (its
settings in pyproject.toml, [tool.snakefmt]) passes on the Snakefile and every workflows/*.smk, and a file written
out of its format is caught."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

RULE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflows").glob("*.smk"))]


def snakefmt(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    exe = shutil.which("snakefmt", path=str(Path(sys.executable).parent)) or shutil.which("snakefmt")
    if exe is None:
        pytest.fail("snakefmt is not installed: it is in the test extra (pip install -e '.[test]')")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_every_rule_file_is_as_snakefmt_writes_it():
    assert len(RULE_FILES) >= 9
    checked = snakefmt("--check", *map(str, RULE_FILES))
    assert checked.returncode == 0, f"run `snakefmt Snakefile workflows/` (the rule files' format):\n{checked.stderr}"


def test_a_rule_file_out_of_format_is_caught(tmp_path):
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")  # the same settings (line length)
    text = (REPO / "workflows" / "train.smk").read_text()
    moved = tmp_path / "train.smk"
    # the log directive moved after the shell command: a layout snakefmt reorders
    rule = text.split("rule finetune:", 1)[0].rstrip("\n") + "\n"
    start = rule.index("    log:\n")
    log = rule[start:rule.index("\n", start + len("    log:\n")) + 1]  # the directive and its one line
    moved.write_text(rule.replace(log, "") + log)
    assert snakefmt("--check", str(moved), cwd=tmp_path).returncode == 1
