#!/usr/bin/env python
"""A training batch's images from the loader's worker processes to the step's device: the stream's uint8 pixels
(B, S, S, 3), made unit floats on the device (hypvl.train.step.batch_on_device), against float32 unit floats
(B, 3, S, S) made in the workers, as the stream sent them before.

    python benchmarks/batch_transfer.py --device cuda   # a paper-size batch (256 at 224 px), 4 loader processes
    python benchmarks/batch_transfer.py --device cpu --batch 64 --workers 2

Per format: the bytes of a batch; the seconds per batch the loader delivers (workers making a fresh batch each, the
same copy of a template for both formats, so only the bytes differ; pinned for a GPU, in the loader's pinning
thread); the seconds per batch of the copy to the device and `batch_on_device` (synchronised); and whether the
device's floats are bitwise the CPU's.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, IterableDataset

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peaks import synchronize  # noqa: E402

from hypvl.data.transforms import to_unit_float  # noqa: E402
from hypvl.train.step import batch_on_device  # noqa: E402

FORMATS = ("uint8", "float32")


def template(batch: int, size: int, wire: str) -> torch.Tensor:
    """A batch of random pixels as the stream sends them (uint8) or as unit floats (float32)."""
    generator = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 256, (batch, size, size, 3), dtype=torch.uint8, generator=generator)
    return pixels if wire == "uint8" else to_unit_float(pixels)


class Batches(IterableDataset):
    """Endless fresh copies of a template batch, as a loader worker makes a new batch each time."""

    def __init__(self, batch: int, size: int, wire: str):
        self.batch, self.size, self.wire = batch, size, wire

    def __iter__(self):
        images = template(self.batch, self.size, self.wire)
        while True:
            yield {"images": images.clone()}


def measure(device: torch.device, batch: int, size: int, workers: int, batches: int) -> dict:
    """Per format: bytes, loader seconds per batch, device seconds per batch (median), bitwise check."""
    out = {"device": str(device), "batch": batch, "image_size": size, "workers": workers, "batches": batches}
    for wire in FORMATS:
        loader = DataLoader(Batches(batch, size, wire), batch_size=None, num_workers=workers,
                            pin_memory=device.type == "cuda", prefetch_factor=2 if workers else None)
        delivered, moved, first = [], [], None
        start = time.perf_counter()
        for _, item in zip(range(batches + 1), loader):  # the first batch waits for the workers to start
            delivered.append(time.perf_counter() - start)
            sent = item["images"].nbytes
            synchronize(device)
            begin = time.perf_counter()
            floats = batch_on_device(item, device)["images"]
            synchronize(device)
            moved.append(time.perf_counter() - begin)
            first = floats if first is None else first
            start = time.perf_counter()
        out[wire] = {"bytes": sent,
                     "loader_s_per_batch": statistics.median(delivered[1:]),
                     "device_s_per_batch": statistics.median(moved[1:]),
                     "bitwise": torch.equal(first.cpu(), template(batch, size, "float32"))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--workers", type=int, default=4, help="loader processes")
    parser.add_argument("--batches", type=int, default=20, help="timed batches per format")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device here: --device cpu measures the loader's part")
    print(json.dumps(measure(torch.device(args.device), args.batch, args.image_size, args.workers, args.batches),
                     indent=1))


if __name__ == "__main__":
    main()
