"""DataLoader worker processes: the shared memory their batches need, and their deaths, each in one line.

Batches reach the consuming process through /dev/shm; where it holds less than the batches in flight (64 MB by
default in Docker and Kubernetes), a worker dies of a bus error, hours into a run. Training and evaluation check
before their workers start (`check_shared_memory`); a worker that dies anyway (that, or the kernel's OOM killer) is
one line naming the setting (`worker_deaths`), not PyTorch's traceback.
"""

import os
import re
from contextlib import contextmanager
from pathlib import Path

from hypvl.errors import InputError

SHM = Path("/dev/shm")
MiB = 2**20
# PyTorch's messages for a worker that died (torch.utils.data.dataloader), not for an exception raised in one
DEATH = re.compile(r"DataLoader worker \(pids?(\(s\))? [\d, ]+\) (exited unexpectedly|is killed by signal)")
MORE_SHM = "shared memory (docker run --shm-size; a memory-backed volume on /dev/shm in Kubernetes)"


def check_shared_memory(batch: int, workers: int, prefetch: int, setting: str, processes: int = 1,
                        shm: Path = SHM, unit: str = "batches") -> None:
    """Refuse when `processes` processes on this machine (LOCAL_WORLD_SIZE under torchrun), each with `workers`
    loader processes (`setting`) `prefetch` `unit` of `batch` bytes ahead (and one being read), would hold more in
    `shm` than it has free. Nothing to check without workers, or without `shm` (not Linux)."""
    if not workers or not shm.is_dir():
        return
    need = processes * (workers * prefetch + 1) * batch
    stats = os.statvfs(shm)
    free = stats.f_bavail * stats.f_frsize
    if need > free:
        raise InputError(f"{shm}: {free / MiB:.0f} MiB free, but {processes} process(es) x {workers} loader "
                         f"processes ({setting}) x {prefetch} {unit} ahead hold up to {need / MiB:.0f} MiB of "
                         f"batches there: lower {setting} or the batch, or give the machine more {MORE_SHM}")


@contextmanager
def worker_deaths(setting: str):
    """A loader process that dies inside the block (PyTorch's RuntimeError) as one line naming `setting`."""
    try:
        yield
    except RuntimeError as exc:
        if not DEATH.search(str(exc)):
            raise
        detail = str(exc.__cause__ if exc.__cause__ is not None and DEATH.search(str(exc.__cause__)) else exc)
        hint = f" (lower {setting}, or give the machine more {MORE_SHM})" if "shared memory" in detail else ""
        raise InputError(f"a loader process ({setting}) died: {detail}{hint}") from None
