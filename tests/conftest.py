"""Shared test set-up: offline, deterministic, and the repository root as the working directory."""

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _single_thread():
    import torch

    torch.set_num_threads(1)


@pytest.fixture
def rng():
    """numpy's generator, seeded: the random cases of the oracle tests."""
    import numpy as np

    return np.random.default_rng(0)


@pytest.fixture
def workspace(tmp_path):
    """A copy of the replication fixture (a tiny spec and its printed table) in tmp_path."""
    from helpers.replication_fixture import FIXTURE

    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.fixture
def toy_plan(tmp_path):
    """(the plan of a toy spec, tmp_path): helpers.plan_fixture.TOY_SPEC with its results and reports in tmp_path."""
    from helpers.plan_fixture import toy_plan_in

    return toy_plan_in(tmp_path)


HYCOCLIP_TABLES = ("table3", "table5", "table10")  # on the three ViT-S GRIT models
TABLE2_ROWS = ("vits_clip", "vits_meru", "vits_hycoclip")  # retrieval and hierarchy on the same three


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """The real default config run into a temporary folder (its results folder returned): the README's main job
    (HyCoCLIP Table 1), HyCoCLIP's other tasks on its three ViT-S GRIT models and the config's `regression_extras`,
    so every task group runs; a second call finds nothing to do. Shared by the smoke regression and the tests that
    run the same jobs elsewhere (through SLURM) and compare."""
    import json

    from helpers.workflow import snakemake

    from hypvl.config import load_config
    from hypvl.tasks import group_tasks

    tmp = tmp_path_factory.mktemp("smoke")
    config = tmp / "paths.yaml"
    config.write_text(json.dumps({"data_dir": str(tmp / "data"), "results_dir": str(tmp / "results"),
                                  "reports_dir": str(tmp / "reports")}))
    metrics = tmp / "results" / "metrics"
    targets = [str(tmp / "reports" / "table1.md"), *(str(tmp / "reports" / "hycoclip" / f"{t}.md")
                                                    for t in HYCOCLIP_TABLES)]
    targets += [str(tmp / "results" / "rows" / "hycoclip" / "table2" / f"{row}.csv") for row in TABLE2_ROWS]
    groups = group_tasks("smoke")
    targets += [str(metrics / experiment / f"{groups[group][0]}.json")  # one JSON per group job
                for experiment, extra in load_config()["regression_extras"].items() for group in extra]
    run = snakemake(*targets, "--cores", "2", "--configfile", str(config))
    assert run.returncode == 0, run.stderr[-3000:]
    again = snakemake(*targets, "--cores", "2", "--configfile", str(config))
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    return tmp / "results"


# The modules whose tests share the smoke run (and the SLURM test cluster, which one of them restarts): one group.
SMOKE_RUN_MODULES = ("test_smoke_regression", "test_slurm")


def pytest_xdist_make_scheduler(config, log):
    """CI's workers (`pytest -n 2`): each module's tests on one worker, so that a module's fixtures are made once, and
    the smoke run's users on one worker (pytest-xdist's loadgroup marks are lost on pytest 9's node ids, hence a
    scheduler of our own; its groups are run in collection order, `--no-loadscope-reorder`)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "smoke_run" if Path(module).stem in SMOKE_RUN_MODULES else module

    return ByModule(config, log)


def pytest_collection_modifyitems(items):
    """The smoke run's users first: the longest group begins while the other worker takes the rest."""
    items.sort(key=lambda item: item.module.__name__ not in SMOKE_RUN_MODULES)


def pytest_terminal_summary(terminalreporter):
    """The SLURM job ids each test of tests/workflow/test_slurm.py recorded (`slurm_jobs`), in the test log."""
    lines = [value for report in terminalreporter.getreports("passed") + terminalreporter.getreports("failed")
             for name, value in getattr(report, "user_properties", ()) if name == "slurm_jobs"]
    if lines:
        terminalreporter.section("SLURM jobs per test")
        for line in lines:
            terminalreporter.write_line(line)
