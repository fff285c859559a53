"""The largest training batch that fits on a GPU, for benchmarks/gpu: a first guess from hypvl.workflow.cost's memory model,
halved on OOM, then predicted from the measured peak memory (linear in the batch above the resting memory: weights,
gradients, optimiser state) and bisected after an OOM; a multiple of 8, at most 5 steps tried.
"""

import gc

import torch
from train_step import batch_of

from hypvl.workflow.cost import Run
from hypvl.train.step import TrainStep

MULTIPLE = 8


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def device_batch(config: dict, size: int, boxes: bool, device: torch.device) -> dict:
    """A random training batch of `size` pairs (with box crops and phrases: `boxes`), drawn on `device`."""
    return batch_of(config["model"], size, boxes, device)


def try_batch(step: TrainStep, config: dict, boxes: bool, size: int) -> tuple[int, int] | None:
    """(peak, resting) bytes allocated in one step at batch `size` and after it; None where it ran out of memory."""
    try:
        torch.cuda.reset_peak_memory_stats(step.device)
        step(device_batch(config, size, boxes, step.device))
        torch.cuda.synchronize(step.device)
        return torch.cuda.max_memory_allocated(step.device), torch.cuda.memory_allocated(step.device)
    except torch.cuda.OutOfMemoryError:
        pass
    after_oom(step)
    return None


def after_oom(step: TrainStep) -> None:
    """Called after an OOM mid-step, outside its handler (whose traceback held the activations): no gradients, no
    optimiser state (the step may have stopped half-way creating it), a fresh loss scaler, the cache released."""
    step.optimizer.zero_grad(set_to_none=True)
    step.optimizer.state.clear()
    step.scaler = step.precision.scaler()
    free(step.device)


def largest_batch(fits, first: int, usable: float, max_tries: int = 5) -> tuple[int | None, list]:
    """The largest batch (a multiple of 8) found to fit, and the tries [(batch, peak bytes or None)]. `fits(batch)`
    runs a step: (peak, resting) bytes, or None on OOM. From `first`, halve until one fits; then predict the batch
    that fills `usable` bytes from the peak (linear in the batch above the resting memory), bisecting after an OOM."""
    tries, size = [], max(MULTIPLE, first // MULTIPLE * MULTIPLE)
    while (found := fits(size)) is None:
        tries.append((size, None))
        if size == MULTIPLE or len(tries) == max_tries:
            return None, tries
        size = max(MULTIPLE, size // 2 // MULTIPLE * MULTIPLE)
    tries.append((size, found[0]))
    best, failed = size, None
    while len(tries) < max_tries:
        peak, resting = found
        predicted = int((usable - resting) / (max(1, peak - resting) / best)) // MULTIPLE * MULTIPLE
        size = (best + failed) // 2 // MULTIPLE * MULTIPLE if failed else min(predicted, 4 * best)
        if size <= best:
            break
        result = fits(size)
        tries.append((size, result[0] if result else None))
        if result is None:
            failed = size
        else:
            best, found = size, result
    return best, tries


def first_guess(towers, encodings: int, usable: float) -> int:
    """The batch hypvl.workflow.cost's memory model says fills `usable` bytes of one GPU."""
    state = Run(towers, 0, 1, encodings).gpu_bytes(1)
    return int((usable - state) / (Run(towers, 1, 1, encodings).gpu_bytes(1) - state))
