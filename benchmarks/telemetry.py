"""What a run's telemetry (`train.telemetry`) costs a training step on the CPU.

Two figures: the reporting of one step alone (`Telemetry.record` of a MERU log row: train_log.csv appended and
flushed, with TensorBoard's scalars and the progress line every 50 steps), median of repeated runs of many steps;
and smoke-scale MERU training (the default config's model and batch 64, one thread) with telemetry off and on,
runs interleaved, the median seconds per step of each (the run's own clock: setup and the first step included).

    python benchmarks/telemetry.py
"""

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

import torch
from PIL import Image

from hypvl.config import load_config
from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.data.formats.images import encode_image
from hypvl.train.telemetry import Telemetry
from hypvl.train.trainer import train

OFF = {"log_every": 0, "tensorboard": False, "wandb": None}
ON = {"log_every": 50, "tensorboard": True, "wandb": None}
ROW = {"step": 0, "loss": 4.1, "contrastive": 4.0, "entailment": 0.1, "lr": 5e-4, "curvature": 1.0,
       "temperature": 0.07}
EXPERIMENT = {"id": "bench", "method": "meru", "backbone": "vit_s16", "seed": 0}


def record_seconds(settings: dict, steps: int, repeats: int) -> float:
    """Median over `repeats` fresh runs of seconds per `Telemetry.record` call, `steps` calls each."""
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder, Telemetry(Path(folder), settings, "bench", steps, 64, "cpu",
                                                                progress=False) as telemetry:
            start = time.perf_counter()
            for step in range(steps):
                telemetry.record({**ROW, "step": step})
            times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def smoke_shards(folder: Path, n: int = 128) -> list[Path]:
    records = [GroundedRecord(f"k{i:04d}", encode_image(Image.new("RGB", (32, 32), (i % 256, 0, 0))), f"caption {i}",
                              []) for i in range(n)]
    return write_grounded_shards(records, folder, shard_size=64)


def training_seconds(steps: int, repeats: int) -> dict[str, float]:
    """Median seconds per step of smoke MERU training runs of `steps` steps, telemetry off and on, interleaved."""
    config = load_config()
    times = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as tmp:
        shards = smoke_shards(Path(tmp) / "data")
        for repeat in range(repeats):
            for name, settings in (("off", OFF), ("on", ON)):
                train_cfg = {**config["train"], "steps": steps, "device": "cpu", "telemetry": settings}
                summary = train(EXPERIMENT, config["model"], train_cfg, shards, Path(tmp) / f"{name}{repeat}",
                                progress=False)
                times[name].append(summary["seconds"] / steps)
    return {name: statistics.median(values) for name, values in times.items()}


def measure(record_steps: int = 2000, train_steps: int = 20, repeats: int = 5) -> dict:
    torch.set_num_threads(1)
    lines, sink = logging.getLogger("hypvl"), logging.NullHandler()  # the progress lines made, shown nowhere
    level, propagate = lines.level, lines.propagate
    lines.setLevel(logging.INFO)
    lines.propagate = False
    lines.addHandler(sink)
    try:
        return {"record": {"csv": record_seconds(OFF, record_steps, repeats),
                           "csv + tensorboard + lines": record_seconds(ON, record_steps, repeats)},
                "train": training_seconds(train_steps, repeats), "record_steps": record_steps,
                "train_steps": train_steps, "repeats": repeats}
    finally:
        lines.removeHandler(sink)
        lines.setLevel(level)
        lines.propagate = propagate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record-steps", type=int, default=2000)
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    result = measure(args.record_steps, args.train_steps, args.repeats)
    for name, seconds in result["record"].items():
        print(f"Telemetry.record, {name}: {1e6 * seconds:.0f} us/step (median of {args.repeats} x "
              f"{args.record_steps} steps)")
    off, on = result["train"]["off"], result["train"]["on"]
    print(f"smoke MERU training, batch 64, 1 thread: {1000 * off:.1f} ms/step off, {1000 * on:.1f} ms/step on "
          f"({100 * (on / off - 1):+.1f}%; median of {args.repeats} interleaved runs of {args.train_steps} steps)")


if __name__ == "__main__":
    main()
