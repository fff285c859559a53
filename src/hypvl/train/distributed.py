"""Data-parallel training under torchrun: one process per device, the process group from the environment torchrun
sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), NCCL between GPUs and gloo between CPU processes,
with the same code. Without WORLD_SIZE (or with 1) training runs in this one process.
"""

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

from hypvl.errors import InputError


@dataclass(frozen=True)
class Ranks:
    """This process's rank, the number of processes, its rank on its machine (its GPU) and the number there."""

    rank: int = 0
    world: int = 1
    local: int = 0
    local_world: int = 1

    @property
    def main(self) -> bool:
        """True for the process that writes the outputs."""
        return self.rank == 0


def from_environment(environ=os.environ) -> Ranks:
    """The ranks torchrun gives this process; one process without WORLD_SIZE."""
    try:
        world = int(environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return Ranks()
        ranks = Ranks(int(environ["RANK"]), world, int(environ["LOCAL_RANK"]), int(environ.get("LOCAL_WORLD_SIZE", 1)))
    except KeyError as exc:
        raise InputError(f"WORLD_SIZE is {environ['WORLD_SIZE']} but {exc.args[0]} is not set: start data-parallel "
                         "training with torchrun") from None
    except ValueError as exc:
        raise InputError(f"torchrun environment: {exc}") from None
    if not 0 <= ranks.rank < world:
        raise InputError(f"RANK {ranks.rank} is not below WORLD_SIZE {world}")
    return ranks


def start(ranks: Ranks, device: torch.device) -> torch.device:
    """This process's device (its local GPU under torchrun), with the process group started when there are
    several processes."""
    if device.type == "cuda":
        device = torch.device("cuda", ranks.local)
        torch.cuda.set_device(device)
    if ranks.world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=ranks.rank, world_size=ranks.world,
                                device_id=device if device.type == "cuda" else None)
    return device


def stop(ranks: Ranks) -> None:
    if ranks.world > 1 and dist.is_initialized():
        dist.destroy_process_group()


def data_parallel(model: torch.nn.Module, ranks: Ranks, device: torch.device,
                  fp16_compression: bool = False) -> torch.nn.Module:
    """`model` wrapped for data-parallel steps (its gradients averaged across ranks), or itself alone. With
    `fp16_compression` the gradients travel and are summed in float16 (torch's `fp16_compress_hook`, what MERU's and
    HyCoCLIP's `ddp_fp16_compression=True` registers), else in their own dtype."""
    if ranks.world == 1:
        return model
    parallel = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    if fp16_compression:
        parallel.register_comm_hook(None, default_hooks.fp16_compress_hook)
    return parallel


def average(ranks: Ranks, values: torch.Tensor) -> torch.Tensor:
    """`values` averaged over the ranks (every rank must call it)."""
    if ranks.world > 1:
        values = values.clone()
        dist.all_reduce(values)
        values /= ranks.world
    return values


def barrier(ranks: Ranks) -> None:
    """Wait until every rank has reached this point (every rank must call it)."""
    if ranks.world > 1:
        dist.barrier()


def gather_objects(ranks: Ranks, value) -> list:
    """Every rank's `value` (picklable), in rank order (every rank must call it)."""
    if ranks.world == 1:
        return [value]
    out = [None] * ranks.world
    dist.all_gather_object(out, value)
    return out
