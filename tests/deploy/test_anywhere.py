"""The workflow and `hypvl` from any directory: the specs, printed tables and baselines are the project's (the
Snakefile's folder, `--project`, or found), the folders the suite writes are the working directory's; the workflow
as a Snakemake `module` of another one. Dry runs only (seconds)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from hypvl.config import PROJECT_ENV, find_project, load_config
from hypvl.errors import InputError

BIN = Path(sys.executable).parent


def run(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop(PROJECT_ENV, None)
    return subprocess.run([str(BIN / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def compare_command(output: str) -> str:
    return next(line for line in output.splitlines() if "hypvl compare" in line)


def test_the_main_job_plans_from_another_directory_into_a_third(tmp_path):
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    result = run("snakemake", "-s", str(REPO / "Snakefile"), "-n", "-p", "--cores", "2", "reports/table1.md",
                 "--directory", str(elsewhere), cwd=here)
    assert result.returncode == 0, result.stderr[-3000:]
    command = compare_command(result.stdout)
    assert f"--spec {REPO}/replication/hycoclip.yaml" in command
    assert f"--expected-dir {REPO}/expected" in command
    assert "--out results/smoke/tables/hycoclip/table1.csv" in command  # outputs: the --directory's
    assert not list(here.iterdir())  # nothing written where snakemake was started


def test_the_workflow_runs_as_a_module_of_another_workflow(tmp_path):
    """A second workflow uses every rule (`use rule * from hypvl`); its config goes over the packaged default."""
    (tmp_path / "mine.yaml").write_text("results_dir: mine/results\nwarm_start: false\n")
    (tmp_path / "Snakefile").write_text(
        'configfile: "mine.yaml"\n\n'
        f'module hypvl:\n    snakefile: "{REPO}/Snakefile"\n    config: config\n\n'
        "use rule * from hypvl as hypvl_*\n")
    result = run("snakemake", "-n", "-p", "--cores", "2", "reports/table1.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    command = compare_command(result.stdout)
    assert f"--spec {REPO}/replication/hycoclip.yaml" in command
    assert "--metrics-dir mine/results/metrics" in command
    assert re.search(r"^rule hypvl_compare:", result.stdout, re.M)


def test_coverage_runs_from_another_directory(tmp_path):
    result = run("hypvl", "coverage", "--scale", "smoke", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "## hycoclip" in result.stdout and "### table1:" in result.stdout


def test_a_project_that_is_none_is_one_line(tmp_path):
    result = run("hypvl", "coverage", "--project", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (f"hypvl coverage: --project {tmp_path}: not a hypvl project (no replication/ "
                                      "and expected/ folders)")


def _project(folder: Path) -> Path:
    (folder / "replication").mkdir(parents=True)
    (folder / "expected").mkdir()
    return folder


def test_the_project_is_found_above_the_working_directory_before_the_environment(tmp_path, monkeypatch):
    inside, named = _project(tmp_path / "a"), _project(tmp_path / "b")
    (inside / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.setenv(PROJECT_ENV, str(named))
    monkeypatch.chdir(inside / "sub" / "deeper")
    assert find_project() == inside
    monkeypatch.chdir(tmp_path)
    assert find_project() == named
    monkeypatch.delenv(PROJECT_ENV)
    assert find_project() == REPO  # the checkout this package runs from


def test_relative_input_folders_are_the_projects_and_outputs_stay_the_working_directorys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(project=REPO)
    assert config["replication_dir"] == str(REPO / "replication")
    assert config["baselines_dir"] == str(REPO / "baselines")
    assert config["results_dir"] == "results/smoke"
    with pytest.raises(InputError, match="not a hypvl project"):
        load_config(project=tmp_path)


def conda_pip_lines(env_file: Path) -> list[str]:
    """The pip section of a conda environment file: what conda writes into the requirements file it installs."""
    document = yaml.safe_load(env_file.read_text())
    return next(entry["pip"] for entry in document["dependencies"] if isinstance(entry, dict))


def test_the_rules_conda_environment_installs_the_project_from_its_own_path(tmp_path):
    """No conda can be installed here (conda-forge is out of reach), so conda's step is done as conda does it: the
    pip lines written to a requirements file beside Snakemake's copy of the environment file (.snakemake/conda/),
    pip run there with the environment the workflow sets ($HYPVL_PROJECT); pip resolves (dry run, no index) the
    constraints file and the editable project with the workflow's extras, from the checkout."""
    env_file = re.search(r'^ENV = "(.+?)"', (REPO / "workflows" / "common.smk").read_text(), re.M).group(1)
    lines = conda_pip_lines(REPO / "workflows" / env_file)
    copy = tmp_path / ".snakemake" / "conda"
    copy.mkdir(parents=True)
    (copy / "condaenv.requirements.txt").write_text("\n".join(lines) + "\n")
    env = {**os.environ, PROJECT_ENV: str(REPO)}
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index",
                             "--no-build-isolation", "--quiet", "--report", "report.json", "-r",
                             "condaenv.requirements.txt"], cwd=copy, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (install,) = json.loads((copy / "report.json").read_text())["install"]
    assert install["metadata"]["name"] == "hypvl"
    assert install["download_info"]["url"] == REPO.as_uri() and install["download_info"]["dir_info"]["editable"]
    assert install["requested_extras"] == ["workflow"]
    no_project = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index",
                                 "-r", "condaenv.requirements.txt"], cwd=copy,
                                env={k: v for k, v in os.environ.items() if k != PROJECT_ENV}, capture_output=True,
                                text=True, timeout=600)
    assert no_project.returncode != 0  # without the workflow's variable the file names no project


def test_a_modules_part_rules_take_its_group_rules_settings(tmp_path):
    """As a module with its rules renamed, a part rule (hypvl_evaluate_scene_part<n>) takes the set-resources given
    under its group rule's new name (the rule names a profile of the other workflow sees)."""
    (tmp_path / "mine.yaml").write_text("results_dir: mine/results\nwarm_start: false\n")
    (tmp_path / "Snakefile").write_text(
        'configfile: "mine.yaml"\n\n'
        f'module hypvl:\n    snakefile: "{REPO}/Snakefile"\n    config: config\n\n'
        "use rule * from hypvl as hypvl_*\n")
    result = run("snakemake", "-n", "--cores", "2", "mine/results/metrics/hyco_clip_vits_grit/vlc_object.json",
                 "--set-resources", "hypvl_evaluate_scene:mem_mb=4321", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    block = re.search(r"^rule hypvl_evaluate_scene_part\d+:\n((?:    .*\n)+)", result.stdout, re.M)
    assert block and re.search(r"^    resources: .*\bmem_mb=4321\b", block.group(1), re.M), result.stdout[-3000:]


def test_coverage_says_where_it_read_the_metrics(tmp_path):
    """Results are the working directory's, not --project's: run elsewhere, coverage says where it looked."""
    result = run("hypvl", "coverage", "--project", str(REPO), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == (f"hypvl coverage: computed cells read from {tmp_path.resolve()}/results/smoke/"
                                     "metrics (0 metric JSONs: no such folder, so nothing is computed; run from the "
                                     "folder holding the results or give --metrics-dir)")
