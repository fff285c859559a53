"""The smoke world's raw corpora and the grounding settings used on them."""

from pathlib import Path

import pytest

from hypvl.worlds.smoke.corpora import write_corpus
from hypvl.worlds.smoke.settings import WorldSettings
from hypvl.grounding import resume
from hypvl.grounding.filters import BoxFilter


def _killed_after(shards: int, monkeypatch, ground) -> None:
    """Run `ground`, killed (KeyboardInterrupt) right after its progress of shard `shards` was saved."""
    done = resume.Progress.shard_done
    calls = []

    def shard_done(self, state):
        done(self, state)
        calls.append(1)
        if len(calls) == shards:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(resume.Progress, "shard_done", shard_done)
        with pytest.raises(KeyboardInterrupt):
            ground()


SMOKE = WorldSettings(seed=5, grit_samples=60, redcaps_samples=40, cc3m_samples=20, yfcc15m_samples=24, shard_size=25)
FILTER = BoxFilter(min_side=9, threshold=0.65)
CROP = 32


def write_raw_corpora(root: Path) -> Path:
    """The SMOKE world's four raw corpora under `root`."""
    for corpus, count in (("grit", SMOKE.grit_samples), ("redcaps", SMOKE.redcaps_samples),
                          ("cc3m", SMOKE.cc3m_samples), ("yfcc15m", SMOKE.yfcc15m_samples)):
        write_corpus(SMOKE, corpus, root / corpus, count)
    return root
