"""The global batch under data parallelism (torchrun): features gathered across ranks with their gradients, and
means over every rank's terms. Without a process group (one process) both reduce to the local batch.

Each rank computes its loss on its own rows against every rank's candidates, and DistributedDataParallel averages
the ranks' gradients; the all-gather's backward sums each row's gradient over the ranks that used it, so the
parameters get the gradient of the global batch's loss, as MERU and HyCoCLIP train (MERU App. B).
"""

import warnings

import torch
import torch.distributed as dist
from torch import Tensor
from torch.distributed.nn.functional import all_gather


def world_size() -> int:
    """Processes in the default group; 1 without one."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def gather_with_grad(rows: Tensor) -> tuple[Tensor, int]:
    """(world * B, ...) every rank's `rows` in rank order, differentiable, and the index of this rank's first
    row in them. Every rank must call it with the same shape."""
    if world_size() == 1:
        return rows, 0
    with warnings.catch_warnings():  # torch suggests a private module instead; this public one does the job
        warnings.filterwarnings("ignore", message=".*all_gather is deprecated", category=FutureWarning)
        gathered = all_gather(rows)
    return torch.cat(gathered), dist.get_rank() * rows.shape[0]


def global_mean(terms: Tensor) -> Tensor:
    """The mean of every rank's `terms` (any count per rank, none included), as this rank's share: the ranks'
    values average to the global mean, and so do their gradients. Every rank must call it."""
    world = world_size()
    count = torch.tensor(float(terms.numel()), device=terms.device)
    if world > 1:
        dist.all_reduce(count)
    return terms.sum() * world / count.clamp(min=1.0)
