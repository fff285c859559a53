"""Data parallelism on the CPU: gloo process groups on a free port, and the world size the tests spawn."""

import os
import socket

import torch

from hypvl.train import distributed
from hypvl.train.syntax import collate_syntax


GLOBAL_BATCH, WORLD = 8, 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _collate(samples: list[dict]) -> dict:
    batch = {key: torch.stack([s[key] for s in samples]) for key in samples[0] if key != "syntax"}
    if "syntax" in samples[0]:
        batch.update(collate_syntax([s["syntax"] for s in samples]))
    return batch


def join_gloo(rank: int, port: int, world: int) -> tuple[distributed.Ranks, torch.device]:
    """This spawned process as rank `rank` of `world` CPU processes meeting at `port`, as torchrun would start it."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    ranks = distributed.from_environment()
    return ranks, distributed.start(ranks, torch.device("cpu"))
