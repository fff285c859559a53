"""DAG faults: the workflow killed at a random point (SIGTERM to Snakemake, or SIGKILL to its whole process
group) and started again finishes without redoing finished jobs, and its result is byte-identical to an
uninterrupted run's (no job consumed a partial output). After a hard kill, the README's recovery is used:
`snakemake --unlock`, then the same command with `--rerun-incomplete`."""

import base64
import hashlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers.dag import TARGET, command, run, workdir

# the last output each upstream job writes (atomically): it exists only once the job has finished
FINISHED = ("data/train/redcaps/corpus.json", "data/manifest.json", "data/train/redcaps_grounded/grounding.json")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def marked_incomplete(folder: Path) -> set[str]:
    """The outputs Snakemake still marks incomplete: one marker each under .snakemake/incomplete, named by the
    output's path in URL-safe base64 (split into '@'-prefixed folders where longer than a file name)."""
    root = folder / ".snakemake" / "incomplete"
    markers = [path for path in root.rglob("*") if path.is_file() and path.name != "migration_underway"]
    return {base64.urlsafe_b64decode("".join(part.lstrip("@") for part in marker.relative_to(root).parts)).decode()
            for marker in markers}


def finished_outputs(folder: Path) -> dict[str, int]:
    """The FINISHED outputs present and no longer marked incomplete (a job killed after writing its output but
    before Snakemake recorded it finished is rightly redone), with their modification times."""
    pending = marked_incomplete(folder)
    return {name: (folder / name).stat().st_mtime_ns for name in FINISHED
            if (folder / name).exists() and not any(path.endswith(name) for path in pending)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The target run uninterrupted (its folder), once for both kinds of kill."""
    folder = workdir(tmp_path_factory.mktemp("dag"), "reference")
    run(folder)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "sigkill_group"])
def test_killed_workflow_resumes_without_redoing_or_consuming_partial_outputs(tmp_path, reference, hard):
    folder = workdir(tmp_path, "killed")
    delay = random.uniform(2.0, 16.0)
    process = subprocess.Popen(command(folder), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    time.sleep(delay)
    if hard:
        os.killpg(process.pid, signal.SIGKILL)
    else:
        process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    before = finished_outputs(folder)
    if hard:
        run(folder, "--unlock")
    resumed = run(folder, *(["--rerun-incomplete"] if hard else []))
    assert digest(folder / TARGET) == digest(reference / TARGET), f"killed after {delay:.1f} s"
    redone = [name for name, mtime in before.items() if (folder / name).stat().st_mtime_ns != mtime]
    assert redone == [], f"killed after {delay:.1f} s, redone: {redone}\n{resumed.stdout[-2000:]}"
