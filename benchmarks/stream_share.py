"""The training data stream's share of a training run: the stream alone (parse, decode, tokenise, crop and
collate the batches of a whole smoke run) against the training steps alone, for CLIP's view (pairs) and
HyCoCLIP's (a box per sample), on one thread.

    python benchmarks/stream_share.py --data data/smoke
"""

import argparse
import json
import time
from pathlib import Path

import torch

from hypvl.config import load_config
from hypvl.data.formats.shards import shard_paths
from hypvl.models.encoders import Tokenizer
from hypvl.train.data import TrainingStream
from hypvl.train.recipe import resolve_schedule

from train_step import measure as step_seconds

VIEWS = {"pairs": "CLIP", "compositional": "HyCoCLIP"}


def stream_seconds(shards: list[Path], mode: str, config: dict, batches: int, batch_size: int, cache: bool) -> float:
    """Seconds to produce the first `batches` batches through the training DataLoader (in this process, as smoke
    training runs), consumed as fast as they come."""
    model = config["model"]
    stream = TrainingStream(shards, Tokenizer(model["text"]["context_length"]), model["image_size"], batch_size, mode,
                            seed=0, shuffle_buffer=config["train"]["shuffle_buffer"], cache=cache)
    start = time.perf_counter()
    for _ in zip(range(batches), stream.loader()):
        pass
    return time.perf_counter() - start


def measure(data_dir: Path, corpus: str = "grit") -> dict:
    """Per view: stream seconds for a whole run (decoded once, from grounding's decoded twins where the corpus has
    them; and re-read from the tar shards every pass), step seconds, share."""
    torch.set_num_threads(1)
    config = load_config()
    schedule = resolve_schedule({}, config["train"])
    shards = shard_paths(data_dir / config["corpora"][corpus])
    steps = step_seconds("smoke", batch_size=schedule.batch_size)["seconds"]
    out = {"steps": schedule.steps, "batch": schedule.batch_size, "corpus": corpus}
    for mode, method in VIEWS.items():
        cached = stream_seconds(shards, mode, config, schedule.steps, schedule.batch_size, cache=True)
        reread = stream_seconds(shards, mode, config, schedule.steps, schedule.batch_size, cache=False)
        training = steps[method] * schedule.steps
        out[method] = {"stream_s": cached, "stream_reread_s": reread, "steps_s": training,
                       "share": cached / (cached + training), "share_reread": reread / (reread + training)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a smoke world with grounded corpora (data/smoke)")
    args = parser.parse_args()
    print(json.dumps(measure(args.data), indent=1))


if __name__ == "__main__":
    main()
