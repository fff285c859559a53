"""benchmarks/gpu's clocks: a time limit on a part of the run, and the timed training steps."""

import contextlib
import signal
import time

import torch

from peaks import synchronize


class OutOfTime(Exception):
    pass


REFIRE_S = 1.0  # how often OutOfTime is raised again after the limit, until it leaves the limited code


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise OutOfTime in this (main) thread once `seconds` have passed, and again every REFIRE_S after: code that
    catches and logs every exception (inductor's autotuning and Triton compiling do) cannot outlast the limit."""
    def expire(signum, frame):
        raise OutOfTime(f"stopped at its time limit ({seconds:.0f} s)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01), REFIRE_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def alloc_retries(device: torch.device) -> int | None:
    """Times the CUDA caching allocator has freed its cache and retried an allocation so far (None: not CUDA)."""
    return torch.cuda.memory_stats(device).get("num_alloc_retries", 0) if device.type == "cuda" else None


def time_steps(step, batch: dict, warmup: int, steps: int,
               seconds: float) -> tuple[list[float], int | None]:
    """Seconds of `steps` steps of `step` (hypvl.train.step.TrainStep) after `warmup` (fewer once `seconds` have passed, at least 3), and the allocator's
    retries during them."""
    for _ in range(warmup):
        step(batch)
    if step.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(step.device)
    times, until, retries = [], time.perf_counter() + seconds, alloc_retries(step.device)
    while len(times) < steps and (len(times) < 3 or time.perf_counter() < until):
        synchronize(step.device)
        start = time.perf_counter()
        step(batch)
        synchronize(step.device)
        times.append(time.perf_counter() - start)
    return times, None if retries is None else alloc_retries(step.device) - retries
