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
    run the same jobs elsewhere (through SLURM) and compare: made once a session, under pytest-xdist by the first
    worker to ask while another waits (a lock in the session's folder, which its workers share)."""
    import fcntl

    shared = os.environ.get("PYTEST_XDIST_WORKER") is not None
    folder = (tmp_path_factory.getbasetemp().parent if shared else tmp_path_factory.getbasetemp()) / "smoke"
    folder.mkdir(exist_ok=True)
    with open(folder.parent / "smoke.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "made").exists():
            _make_smoke_run(folder)
            (folder / "made").touch()
    return folder / "results"


def _make_smoke_run(tmp: Path) -> None:
    import json

    from helpers.workflow import snakemake

    from hypvl.config import load_config
    from hypvl.tasks import group_tasks

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


# The longest modules, begun first: the smoke run's regression and the SLURM tests (which share the test cluster, one
# of them restarting it, so they stay on one worker).
FIRST_MODULES = ("test_smoke_regression", "test_slurm")
# then the next longest (a minute or more each, measured in CI), so that the workers end together rather than one
# of them beginning a long module when the other has nothing left
LONG_MODULES = ("test_pilot", "test_extra_rows", "test_train_stopping", "test_dag_faults", "test_determinism",
                "test_newcomer", "test_train_step", "test_train_distributed", "test_benchmark_gpu", "test_warm")


def pytest_xdist_make_scheduler(config, log):
    """CI's workers (`pytest -n 2`): each module's tests on one worker, so that a module's fixtures are made once
    (pytest-xdist's own `loadscope` splits modules by class, and its loadgroup marks are lost on pytest 9's node ids,
    hence a scheduler of our own); modules in collection order (`--no-loadscope-reorder`)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("::", 1)[0]

    return ByModule(config, log)


def pytest_collection_modifyitems(items):
    """FIRST_MODULES first, one per worker (in them, the tests that need the smoke run last: the other worker makes it
    meanwhile), then LONG_MODULES, the longest first; every other module after them, in collection order."""
    def rank(item) -> tuple[int, bool]:
        name = item.module.__name__.rsplit(".", 1)[-1]
        if name in FIRST_MODULES:
            return 0, "smoke_run" in item.fixturenames
        return 1 + (LONG_MODULES.index(name) if name in LONG_MODULES else len(LONG_MODULES)), False

    items.sort(key=rank)


def pytest_terminal_summary(terminalreporter):
    """The SLURM job ids each test of tests/workflow/test_slurm.py recorded (`slurm_jobs`), in the test log."""
    lines = [value for report in terminalreporter.getreports("passed") + terminalreporter.getreports("failed")
             for name, value in getattr(report, "user_properties", ()) if name == "slurm_jobs"]
    if lines:
        terminalreporter.section("SLURM jobs per test")
        for line in lines:
            terminalreporter.write_line(line)
