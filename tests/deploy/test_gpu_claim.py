"""GPUs of its own for each job on one machine (hypvl.runtime.gpu_claim): locks per device, taken first-free, released
when the holder ends however it ends, and the command started on them through CUDA_VISIBLE_DEVICES. The machine's GPUs
are given through CUDA_VISIBLE_DEVICES (this machine has none), the locks kept under the test's folder."""

import os
import subprocess
import sys

import pytest

from hypvl.errors import InputError
from hypvl.runtime.gpu_claim import POLL_S, claim, try_claim

GPUS = ["0", "1", "2", "3"]
SHOW = "import os, sys; print(os.environ.get('CUDA_VISIBLE_DEVICES', '-'), os.getpid(), flush=True); sys.stdin.read()"


def release(held: dict[str, int]) -> None:
    for descriptor in held.values():
        os.close(descriptor)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_jobs_take_the_first_free_gpus_and_none_where_too_few_are_free(tmp_path):
    before = open_descriptors()
    first = try_claim(2, GPUS, tmp_path)
    second = try_claim(2, GPUS, tmp_path)
    assert list(first) == ["0", "1"] and list(second) == ["2", "3"]
    assert try_claim(1, GPUS, tmp_path) is None and open_descriptors() == before + 4  # a failed try holds nothing
    release(first)
    third = try_claim(1, GPUS, tmp_path)
    assert list(third) == ["0"]
    release(second)
    release(third)
    assert open_descriptors() == before and sorted(os.listdir(tmp_path)) == [f"{gpu}.lock" for gpu in GPUS]


def test_a_job_waits_for_its_gpus_saying_so_once(tmp_path):
    holder = try_claim(2, ["0", "1"], tmp_path)
    said, waits = [], []

    def wait(seconds):  # the holder ends during the second wait
        waits.append(seconds)
        if len(waits) == 2:
            release(holder)

    held = claim(1, ["0", "1"], tmp_path, say=said.append, wait=wait)
    assert list(held) == ["0"] and waits == [POLL_S, POLL_S]
    assert said == [f"hypvl.runtime.gpu_claim: waiting for 1 of GPUs 0,1: other jobs hold them (locks in {tmp_path})"]
    release(held)


def test_more_gpus_than_the_machine_has_are_refused_naming_both(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with pytest.raises(InputError, match=r"^the job asks for 3 GPUs, but this machine shows 2 "
                                         r"\(CUDA_VISIBLE_DEVICES: 0,1\)$"):
        claim(3, ["0", "1"], tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_lock_folder_of_another_user_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    with pytest.raises(InputError, match=f"^{tmp_path}: the GPU lock folder belongs to another user \\(set TMPDIR"):
        try_claim(1, GPUS, tmp_path)
    assert not any(tmp_path.iterdir())


def test_device_uuids_lock_files_of_safe_names(tmp_path):
    held = try_claim(1, ["MIG-GPU-5a1c/1/0"], tmp_path)
    assert os.listdir(tmp_path) == ["MIG-GPU-5a1c_1_0.lock"]
    release(held)


def _claimed(tmp_path, *args: str, visible: str | None = "0,1,2,3", **popen) -> subprocess.Popen:
    """`python -m hypvl.runtime.gpu_claim ARGS` on a machine whose GPUs are `visible` (None: as torch counts them)."""
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": visible, "TMPDIR": str(tmp_path)}
    for unset in ("SLURM_JOB_ID", *(["CUDA_VISIBLE_DEVICES"] if visible is None else [])):
        environment.pop(unset, None)
    return subprocess.Popen([sys.executable, "-m", "hypvl.runtime.gpu_claim", *args], env=environment, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def test_a_command_runs_on_gpus_of_its_own_until_it_ends_even_killed(tmp_path):
    """The first job becomes its command (the same process) on GPUs 0 and 1, holding them while it lives; the next
    gets 2 and 3; once the first is killed (SIGKILL: nothing of it runs to let go), a third gets 0 and 1."""
    first = _claimed(tmp_path, "2", "--", sys.executable, "-c", SHOW)
    assert first.stdout.readline() == "hypvl.runtime.gpu_claim: GPUs 0,1 of 0,1,2,3\n"
    assert first.stdout.readline() == f"0,1 {first.pid}\n"
    second = _claimed(tmp_path, "2", "--", sys.executable, "-c", SHOW)
    assert second.communicate("", timeout=60)[0].splitlines()[1].split()[0] == "2,3"
    first.kill()
    first.communicate(timeout=60)
    third = _claimed(tmp_path, "2", "--", sys.executable, "-c", SHOW)
    out, _ = third.communicate("", timeout=60)
    assert out.splitlines()[0] == "hypvl.runtime.gpu_claim: GPUs 0,1 of 0,1,2,3" and third.returncode == 0
    assert sorted(os.listdir(tmp_path / f"hypvl-gpus-{os.getuid()}-machine")) == [f"{gpu}.lock" for gpu in GPUS]


@pytest.mark.parametrize("args, visible, code, line", [
    (["5", "--", "true"], "0,1,2,3", 1,
     "hypvl.runtime.gpu_claim: the job asks for 5 GPUs, but this machine shows 4 (CUDA_VISIBLE_DEVICES: 0,1,2,3)"),
    (["1", "--", "no-such-command-here"], "0", 127, "hypvl.runtime.gpu_claim: no-such-command-here: no such command"),
    (["0", "--", "true"], "0", 2, "usage: python -m hypvl.runtime.gpu_claim COUNT -- COMMAND [ARG...] (COUNT: the GPUs "
                                  "the command uses)"),
    (["2", "true"], "0,1", 2, "usage: python -m hypvl.runtime.gpu_claim COUNT -- COMMAND [ARG...] (COUNT: the GPUs the "
                              "command uses)"),
], ids=["too-many", "no-command", "zero", "no-separator"])
def test_a_job_that_cannot_start_says_why_in_one_line(tmp_path, args, visible, code, line):
    done = _claimed(tmp_path, *args, visible=visible)
    out, err = done.communicate("", timeout=60)
    assert (done.returncode, err, out) == (code, line + "\n", "")


@pytest.mark.parametrize("visible", ["", None], ids=["none-visible", "none-counted-by-torch"])
def test_on_a_machine_without_gpus_the_command_runs_unchanged(tmp_path, visible):
    done = _claimed(tmp_path, "1", "--", sys.executable, "-c", SHOW, visible=visible)
    out, err = done.communicate("", timeout=60)
    assert (done.returncode, err, out) == (0, "", f"{'-' if visible is None else ''} {done.pid}\n")
    assert not any(tmp_path.iterdir())
