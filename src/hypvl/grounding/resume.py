"""Grounding that continues where it stopped, and says how far it is.

A paper-scale corpus takes days on one GPU (12M RedCaps pairs through the detector), longer than many clusters let a
job run, and a job can be preempted or cancelled. So `hypvl ground` writes its shards into a staging folder beside
its output (`.<folder>.partial`, swapped into place once whole) and, after each shard, `progress.json` there: how
far the raw corpus has been read, the counts so far, the shards, the seconds, and what makes the shards (`recipe`:
the settings, and the raw corpus's files with their sizes and dates). Started again with the same recipe, it
continues after the last shard: the raw samples before it are passed over undecoded, and the shards come out as an
uninterrupted grounding writes them. With another recipe it starts over. Only what grounding writes there (its
shards, their decoded twins, temporary files, the progress) is ever deleted from the staging folder; anything else
in it is refused, named.
"""

import contextlib
import json
import logging
import re
import time
from datetime import timedelta
from pathlib import Path

from hypvl.errors import InputError, listed
from hypvl.io import atomic_directory, write_json

PROGRESS = "progress.json"
STATE_KEYS = {"recipe", "read", "listed", "counts", "shards", "seconds"}  # what progress.json holds
PROGRESS_S = 60.0  # seconds between progress lines at most (one per shard where shards take longer)

log = logging.getLogger(__name__)


def staging_folder(out: Path) -> Path:
    """The folder a grounding into `out` writes in until it is whole."""
    return out.with_name(f".{out.name}.partial")


def raw_files(folder: Path) -> dict[str, list[int]]:
    """The files directly in raw corpus `folder` (its shards, or YFCC15M's lists) with their sizes and dates: a
    grounding continues only over the raw corpus it began on (a folder of images below is not walked)."""
    if not Path(folder).is_dir():
        return {}  # the reader says what is missing
    stats = {path.name: path.stat() for path in Path(folder).iterdir() if path.is_file()}
    return {name: [stat.st_size, stat.st_mtime_ns] for name, stat in sorted(stats.items())}


def resumable(staging: Path, recipe: dict, prefix: str) -> dict | None:
    """The progress saved in `staging` by an earlier grounding of `recipe`, to continue from (None: start over, with
    `staging` emptied of what grounding wrote there). InputError where `staging` holds a file grounding does not
    write."""
    if not staging.is_dir():
        return None
    names = sorted(path.name for path in staging.iterdir())
    foreign = [name for name in names if not _ours(prefix).fullmatch(name) or (staging / name).is_dir()]
    if foreign:
        raise InputError(f"{staging}: holds what grounding did not write ({listed(foreign)}): move it out, or delete "
                         "the folder to start over")
    progress = _read(staging / PROGRESS)
    if progress is not None and progress.get("recipe") != recipe:
        log.warning("%s: an earlier grounding with other settings or raw files stopped after %d shard(s); starting "
                    "over", staging, len(progress.get("shards", [])))
        progress = None
    written = set(progress["shards"]) if progress else set()
    if recipe.get("decoded_twins"):
        written |= {name.replace(".tar", suffix) for name in written for suffix in (".decoded.npy", ".decoded.json")}
    missing = sorted(written - set(names))
    if missing:
        log.warning("%s: %s of the earlier grounding gone; starting over", staging, listed(missing))
        progress, written = None, set()
    for name in names:  # a shard written after the last progress, temporary files of a killed job, or all of it
        if name not in written and name != PROGRESS:
            (staging / name).unlink()
    return progress


@contextlib.contextmanager
def staged(out: Path, staging: Path, prefix: str):
    """`hypvl.io.atomic_directory` of `out` written in `staging`, which a failure keeps only where it holds progress
    to continue from (a grounding that failed before its first shard was whole leaves no folder behind)."""
    try:
        with atomic_directory(out, staging) as folder:
            yield folder
    except BaseException:
        _discard_unless_resumable(staging, prefix)
        raise


def _discard_unless_resumable(staging: Path, prefix: str) -> None:
    """Remove `staging` where it holds no progress, deleting only what grounding writes there."""
    if not staging.is_dir() or (staging / PROGRESS).exists():
        return
    for path in staging.iterdir():
        if _ours(prefix).fullmatch(path.name) and path.is_file():
            path.unlink()
    with contextlib.suppress(OSError):  # not empty: something grounding did not write stays
        staging.rmdir()


def _ours(prefix: str) -> re.Pattern:
    """The names grounding writes in its staging folder: shards, their decoded twins, temporary files, progress."""
    return re.compile(rf"{re.escape(prefix)}-\d{{6}}(\.tar|\.decoded\.npy|\.decoded\.json)|\..+\.tmp|"
                      rf"{re.escape(PROGRESS)}")


def _read(path: Path) -> dict | None:
    """The progress in `path`, or None where there is none (or it does not parse: it is rewritten after a shard)."""
    try:
        progress = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (UnicodeDecodeError, json.JSONDecodeError):
        progress = None
    if (not isinstance(progress, dict) or not STATE_KEYS <= progress.keys() or not isinstance(progress["shards"], list)
            or not all(isinstance(name, str) for name in progress["shards"])):
        log.warning("%s: unreadable, starting over", path)
        return None
    return progress


class Progress:
    """Saves a grounding's progress after each shard (`shard_done`) and logs a line about it every PROGRESS_S seconds
    at most: shards and samples so far, samples a second, elapsed time. `before` is what earlier attempts took."""

    def __init__(self, staging: Path, recipe: dict, corpus: str, before: float = 0.0, done: int = 0):
        self.staging, self.recipe, self.corpus, self.before = staging, recipe, corpus, before
        self.started = self.logged = time.perf_counter()
        self.done_before = done

    def seconds(self) -> float:
        return self.before + time.perf_counter() - self.started

    def shard_done(self, state: dict) -> None:
        """Record `state` (raw position, counts, shards) as the point to continue from."""
        write_json(self.staging / PROGRESS, {**state, "recipe": self.recipe, "seconds": round(self.seconds(), 2)})
        now = time.perf_counter()
        if now - self.logged < PROGRESS_S:
            return
        counts, self.logged = state["counts"], now
        rate = (counts["samples_in"] - self.done_before) / max(now - self.started, 1e-9)
        log.info("%s: %d shards, %d raw samples read, %d grounded (%d with a box), %.1f samples/s, elapsed %s",
                 self.corpus, len(state["shards"]), state["listed"], counts["samples_in"], counts["samples_grounded"],
                 rate, timedelta(seconds=round(self.seconds())))
