"""Shared test set-up: offline, deterministic, and the repository root as the working directory."""

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]


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
    from replication_fixture import FIXTURE

    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.fixture
def toy_plan(tmp_path):
    """(the plan of a toy spec, tmp_path): plan_fixture.TOY_SPEC with its results and reports in tmp_path."""
    from plan_fixture import toy_plan_in

    return toy_plan_in(tmp_path)
