"""Shared test set-up: offline, deterministic, and the repository root as the working directory."""

import os
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
