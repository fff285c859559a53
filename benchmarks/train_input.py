#!/usr/bin/env python
"""The training input pipeline's images/s at paper size, and the loader processes a GPU needs to never wait for it.

    python benchmarks/train_input.py                       # 0, 1 and 2 loader processes, batches of 256 at 224 px
    python benchmarks/train_input.py --workers 0,4,8 --gpu-images-per-s 2921

Stand-in grounded shards in the real format (`hypvl.data.formats.grounded`, HyCoCLIP's child/parent layout): whole
images that are JPEGs of a photo's size and entropy (`--photo`, default 500x375, about 100 kB: RedCaps and CC3M
images as downloaded at 512 px; HyCoCLIP's GRIT shards store 224-px ones) with one to three 224-px box crops each,
as grounding writes them. The trainer's own stream (`hypvl.train.data.TrainingStream`, read from the tar shards
as a paper-scale run does: `cache_decoded: false`) makes batches of `--batch` at 224 px through its DataLoader with
each count of loader processes (`train.num_workers`; 0: in this process), consumed as fast as they come, for
CLIP's view (pairs: a whole image each) and HyCoCLIP's (compositional: a whole image and a box crop each). Images/s
counts both, as benchmarks/gpu's step does; each process's first batch (their start) is left out.

From the largest count: images/s per loader process; box crops/s per process, from the two views' seconds a sample
(hypvl.workflow.cost's `loader_images_per_s` and `loader_box_crops_per_s`, `resources.gpu`); and for each `--gpu-images-per-s`
(a training step's images/s on one GPU, from benchmarks/gpu: 2,921 for compiled CLIP ViT-B/16 bf16 on an H200) the
loader processes, so CPU cores, each GPU needs to be fed. Process counts beyond this machine's cores measure
contention, not more speed.
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_throughput import write_photos  # noqa: E402

from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards  # noqa: E402
from hypvl.models.encoders import Tokenizer  # noqa: E402
from hypvl.train.data import TrainingStream  # noqa: E402

VIEWS = {"pairs": 1, "compositional": 2}  # images a sample brings to the step: CLIP's view, HyCoCLIP's
CROP = 224  # grounding's box crops (grounding.crop_size)
WORDS = "a photo of the dog cat tree red old man woman on in with near small large street beach".split()


def stand_in_shards(folder: Path, samples: int, shards: int, photo: tuple[int, int], distinct: int = 64) -> list[Path]:
    """`samples` grounded samples in `shards` tar shards; their images drawn from `distinct` photos and crops (each
    sample's bytes decoded anew, as a corpus's distinct images would be)."""
    (folder / "photos").mkdir()
    (folder / "crops").mkdir()
    photos = [path.read_bytes() for path in write_photos(folder / "photos", distinct, photo)]
    crops = [path.read_bytes() for path in write_photos(folder / "crops", distinct, (CROP, CROP))]
    rng = np.random.default_rng(0)

    def caption(length: int) -> str:
        return " ".join(rng.choice(WORDS, length))

    records = (GroundedRecord(f"s{i:07d}", photos[i % distinct], caption(12),
                              [(crops[(i + j) % distinct], caption(3)) for j in range(1 + i % 3)], "stand-in")
               for i in range(samples))
    return write_grounded_shards(records, folder / "shards", shard_size=math.ceil(samples / shards))


def images_per_s(shards: list[Path], mode: str, batch: int, workers: int, rounds: int) -> float:
    """Images/s the training stream delivers with `workers` loader processes (each making every `workers`-th batch),
    over `rounds` batches from each after their first (their start)."""
    stream = TrainingStream(shards, Tokenizer(77), 224, batch, mode, seed=0, shuffle_buffer=batch, cache=False,
                            workers=workers)
    loader = iter(stream.loader())
    for _ in range(max(1, workers)):
        first = next(loader)
        assert first["images"].shape == (batch, 224, 224, 3), first["images"].shape
    start = time.perf_counter()
    for _ in range(rounds * max(1, workers)):
        next(loader)
    return rounds * max(1, workers) * batch * VIEWS[mode] / (time.perf_counter() - start)


def measure(photo: tuple[int, int], batch: int, workers: list[int], rounds: int, gpu_rates: list[float]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        most = max(1, *workers)  # every reader a shard of its own, each pass re-read from the shards
        shards = stand_in_shards(Path(tmp), samples=2 * batch + 32 * most, shards=2 * most, photo=photo)
        out = {"photo": list(photo), "batch": batch, "rounds": rounds, "cpus": os.cpu_count(), "modes": {}}
        for mode in VIEWS:
            rates = {workers_: images_per_s(shards, mode, batch, workers_, rounds) for workers_ in workers}
            per_process = rates[max(workers)] / most
            out["modes"][mode] = {"images_per_s": rates, "per_process": per_process,
                                  "processes_per_gpu": {rate: math.ceil(rate / per_process) for rate in gpu_rates}}
        out["box_crops_per_s"] = box_crops_per_s(out["modes"]["pairs"]["per_process"],
                                                 out["modes"]["compositional"]["per_process"])
        return out


def box_crops_per_s(pairs: float, compositional: float) -> float | None:
    """Box crops/s of a loader process that makes `pairs` images/s of whole images alone and `compositional` of a
    whole image and a box crop each: one over the seconds a box crop adds to a sample (None: within the noise)."""
    added = VIEWS["compositional"] / compositional - 1 / pairs
    return 1 / added if added > 0 else None


def report(result: dict) -> str:
    """The measurements as markdown."""
    width, height = result["photo"]
    lines = [f"Training input: batches of {result['batch']} at 224 px from {width}x{height} JPEGs, "
             f"{result['rounds']} timed batches from each process, {result['cpus']} CPUs.", "",
             "| view | " + " | ".join(f"{w} processes" for w in next(iter(result["modes"].values()))["images_per_s"])
             + " | per process | processes a GPU needs |", "|---" * 5 + "|"]
    for mode, row in result["modes"].items():
        needs = ", ".join(f"{n} at {rate:g} images/s" for rate, n in row["processes_per_gpu"].items())
        lines.append(f"| {mode} | " + " | ".join(f"{rate:.0f}" for rate in row["images_per_s"].values())
                     + f" | {row['per_process']:.0f} | {needs} |")
    crops = result["box_crops_per_s"]
    lines += ["", f"Box crops a process makes beside whole images: {crops:.0f}/s" if crops else
              "Box crops a process makes beside whole images: within the noise of two runs (time them again)"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photo", default="500x375", help="whole images' WIDTHxHEIGHT")
    parser.add_argument("--batch", type=int, default=256, help="a GPU's batch")
    parser.add_argument("--workers", default="0,1,2", help="loader process counts (train.num_workers)")
    parser.add_argument("--rounds", type=int, default=3, help="timed batches from each process")
    parser.add_argument("--gpu-images-per-s", default="2921,921", help="a step's images/s on one GPU")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args()
    photo = tuple(int(side) for side in args.photo.lower().split("x"))
    result = measure(photo, args.batch, [int(w) for w in args.workers.split(",")], args.rounds,
                     [float(rate) for rate in args.gpu_images_per_s.split(",")])
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    main()
