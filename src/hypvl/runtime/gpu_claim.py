"""GPUs of its own for each job on one machine.

Snakemake counts the GPUs of jobs it runs side by side against `--resources gpu=N` (the local profile) but tells
no job which devices are its (snakemake/snakemake#281), so every job would compute on the first ones. The workflow
therefore starts each GPU job of one node through this module:

    python -m hypvl.runtime.gpu_claim 2 -- torchrun --standalone --nproc-per-node 2 -m hypvl.cli train ...

It locks `count` of the machine's GPUs (an exclusive `flock` on a file per device, in a folder of the temporary
directory per user and SLURM allocation), sets CUDA_VISIBLE_DEVICES to them and becomes the command (`exec`). The
command, with any process it forks, holds the locks until they all exit, however they end: the kernel releases
them. The machine's GPUs are CUDA_VISIBLE_DEVICES's where set (a SLURM allocation's: there the job simply takes
those it was given), else every device torch counts; with none, the command runs unchanged. Where fewer are free
than the job asks for (another workflow on the machine holds them), it says so once in the job's log and waits.
Written by hand: no kept library assigns devices to local jobs (Snakemake's scheduling stops at counting them).
"""

import fcntl
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hypvl.errors import InputError

VISIBLE = "CUDA_VISIBLE_DEVICES"
POLL_S = 5.0  # seconds between tries while every GPU the job could take is held


def machine_gpus() -> list[str]:
    """The ids of this machine's GPUs (or of this allocation's): CUDA_VISIBLE_DEVICES's entries, else torch's count."""
    visible = os.environ.get(VISIBLE)
    if visible is not None:
        return [gpu.strip() for gpu in visible.split(",") if gpu.strip()]
    import torch  # only here: a job given its devices starts without it

    return [str(index) for index in range(torch.cuda.device_count())]


def lock_folder() -> Path:
    """Where the jobs of one user on this machine (or in one SLURM allocation, whose device ids are its own) lock."""
    return Path(tempfile.gettempdir()) / f"hypvl-gpus-{os.getuid()}-{os.environ.get('SLURM_JOB_ID', 'machine')}"


def try_claim(count: int, gpus: list[str], folder: Path) -> dict[str, int] | None:
    """Locks on the first `count` free ones of `gpus`, as open descriptors by GPU id; None, holding none, where
    fewer are free. InputError where `folder` is another user's."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_uid != os.getuid():  # a folder of that name made by someone else could keep us waiting
        raise InputError(f"{folder}: the GPU lock folder belongs to another user (set TMPDIR to a folder of yours)")
    held: dict[str, int] = {}
    for gpu in gpus:
        descriptor = os.open(folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', gpu)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            continue
        held[gpu] = descriptor
        if len(held) == count:
            return held
    for descriptor in held.values():
        os.close(descriptor)
    return None


def _say(line: str) -> None:
    print(line, flush=True)


def claim(count: int, gpus: list[str], folder: Path, say=_say, wait=time.sleep) -> dict[str, int]:
    """Locks on `count` of `gpus` (`try_claim`), waiting `POLL_S` between tries while too few are free and saying so
    once; InputError where the machine has fewer."""
    if count > len(gpus):
        raise InputError(f"the job asks for {count} GPUs, but this machine shows {len(gpus)} ({VISIBLE}: "
                         f"{os.environ.get(VISIBLE, 'not set; counted by torch')})")
    waited = False
    while (held := try_claim(count, gpus, folder)) is None:
        if not waited:
            say(f"hypvl.runtime.gpu_claim: waiting for {count} of GPUs {','.join(gpus)}: other jobs hold them "
                f"(locks in {folder})")
            waited = True
        wait(POLL_S)
    return held


def main(argv: list[str]) -> int:
    """`python -m hypvl.runtime.gpu_claim COUNT -- COMMAND...`: COMMAND on COUNT GPUs of its own; returns only on
    failure."""
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit() or int(argv[0]) < 1:
        print("usage: python -m hypvl.runtime.gpu_claim COUNT -- COMMAND [ARG...] (COUNT: the GPUs the command uses)",
              file=sys.stderr)
        return 2
    count, command = int(argv[0]), argv[2:]
    if shutil.which(command[0]) is None:  # before waiting for GPUs it could not use
        print(f"hypvl.runtime.gpu_claim: {command[0]}: no such command", file=sys.stderr)
        return 127
    environment = dict(os.environ)
    try:
        gpus = machine_gpus()
        if gpus:
            held = claim(count, gpus, lock_folder())
            for descriptor in held.values():
                os.set_inheritable(descriptor, True)  # held on by the command exec'd below
            environment[VISIBLE] = ",".join(held)
            _say(f"hypvl.runtime.gpu_claim: GPUs {environment[VISIBLE]} of {','.join(gpus)}")
    except InputError as exc:
        print(f"hypvl.runtime.gpu_claim: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # the lock folder or a lock file
        print(f"hypvl.runtime.gpu_claim: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        os.execvpe(command[0], command, environment)
    except OSError as exc:
        print(f"hypvl.runtime.gpu_claim: {command[0]}: {exc.strerror}", file=sys.stderr)
        return 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
