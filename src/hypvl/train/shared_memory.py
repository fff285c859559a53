"""The shared memory a training stream's loader processes need. Their batches reach the training process through
/dev/shm, and where it holds less than the batches in flight (64 MB by default in Docker and Kubernetes), a worker
dies of a bus error hours into a run. Checked before the workers start, in one line with the numbers."""

import os
from pathlib import Path

from hypvl.errors import InputError

SHM = Path("/dev/shm")
MiB = 2**20


def batch_bytes(batch_size: int, image_size: int, context_length: int, views: int) -> int:
    """Bytes of one stream batch: per view (the image, and HyCoCLIP's box), (B, S, S, 3) uint8 pixels and (B, L)
    int64 tokens (syntax targets, a few ids per word, left out)."""
    return views * batch_size * (3 * image_size**2 + 8 * context_length)


def check_shared_memory(batch: int, workers: int, prefetch: int, processes: int = 1, shm: Path = SHM) -> None:
    """Refuse when `processes` training processes on this machine (LOCAL_WORLD_SIZE under torchrun), each with
    `workers` loader processes `prefetch` batches of `batch` bytes ahead (and one being read), would hold more in
    `shm` than it has free. Nothing to check without workers, or without `shm` (not Linux)."""
    if not workers or not shm.is_dir():
        return
    need = processes * (workers * prefetch + 1) * batch
    stats = os.statvfs(shm)
    free = stats.f_bavail * stats.f_frsize
    if need > free:
        raise InputError(f"{shm}: {free / MiB:.0f} MiB free, but {processes} training process(es) x {workers} loader "
                         f"processes (train.num_workers) x {prefetch} batches ahead hold up to {need / MiB:.0f} MiB "
                         "of batches there: lower train.num_workers or the batch, or give the machine more shared "
                         "memory (docker run --shm-size; a memory-backed volume on /dev/shm in Kubernetes)")
