#!/usr/bin/env python
"""How often a "w/ boxes" run's box items train in the same batch as their own parent pair, against independent
shuffling.

    python benchmarks/parent_in_batch.py data/smoke/train/redcaps_grounded --batch 64 --shuffle-buffer 1000

HyCoCLIP Table 1's "CLIP/MERU w/ boxes" add every box "as additional pre-training samples": among RedCaps' 17.7M
independent samples, a box almost never meets its parent caption (which contains its phrase) as an in-batch negative.
The trainer's own stream (`hypvl.train.data.TrainingStream`, mode `boxes_as_pairs`) reads the grounded corpus for one
epoch at the run's batch size and shuffle buffer; the script counts the box items whose parent pair is in their batch
and prints the rate beside what independent shuffling gives: (B - 1) / (M - 1) for items shuffled within windows of M
(the stream's windows), and over the whole corpus. The stream's items are watched through its `_Reader._item`.
"""

import argparse
import sys
from pathlib import Path

from hypvl.data.formats.shards import shard_paths
from hypvl.models.encoders import Tokenizer
from hypvl.train import data as stream_data


def parent_in_batch(shards: list[Path], batch: int, shuffle_buffer: int, seed: int) -> dict:
    """One epoch's counts: box items, those in their parent's batch, and the rates independent shuffling gives."""
    order: list[tuple[int, int]] = []  # (sample, part) of every first-epoch item the stream yields, in its order
    windows: list[int] = []  # items of each first-epoch window
    item, units = stream_data._Reader._item, stream_data._Reader._units

    def watched_item(reader, sample, part, draws):
        made = item(reader, sample, part, draws)
        if made is not None and reader.state.epoch == 0:
            order.append((id(sample), part))
        return made

    def watched_units(reader, samples):
        made = units(reader, samples)
        if reader.state.epoch == 0:
            windows.append(len(made))
        return made

    stream_data._Reader._item, stream_data._Reader._units = watched_item, watched_units
    try:
        stream = stream_data.TrainingStream(shards, Tokenizer(16), 16, batch, "boxes_as_pairs", seed=seed,
                                            shuffle_buffer=shuffle_buffer)
        reader = stream_data._Reader(stream, 0, stream_data.ReaderState())
        for _ in reader.batches():
            if reader.state.epoch:
                break
    finally:
        stream_data._Reader._item, stream_data._Reader._units = item, units
    epoch = order[:len(order) - len(order) % batch]
    boxes = together = 0
    for start in range(0, len(epoch), batch):
        chunk = epoch[start:start + batch]
        parents = {sample for sample, part in chunk if part == 0}
        boxes += sum(part > 0 for _, part in chunk)
        together += sum(part > 0 and sample in parents for sample, part in chunk)
    items = sum(windows)
    window_rate = sum(m * (batch - 1) / max(m - 1, 1) for m in windows) / items
    return {"items": items, "boxes": boxes, "together": together, "rate": together / max(boxes, 1),
            "windows": len(windows), "independent_in_windows": window_rate,
            "independent_corpus": (batch - 1) / max(items - 1, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a grounded corpus folder (its .tar shards)")
    parser.add_argument("--batch", type=int, default=64, help="the run's batch on one reader (smoke: 64)")
    parser.add_argument("--shuffle-buffer", type=int, default=1000, help="config train.shuffle_buffer")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    shards = shard_paths(sorted(args.corpus.glob("*.tar")))
    if not shards:
        sys.exit(f"{args.corpus}: no grounded shards (ground the corpus first: `snakemake --cores all "
                 f"{args.corpus / 'grounding.json'}`)")
    print(f"{args.corpus}: batch {args.batch}, shuffle buffer {args.shuffle_buffer}")
    for seed in range(args.seeds):
        r = parent_in_batch(shards, args.batch, args.shuffle_buffer, seed)
        print(f"seed {seed}: {r['items']} items in {r['windows']} window(s); {r['together']} of {r['boxes']} box items "
              f"in their parent's batch: {r['rate']:.2%} (independent shuffling: {r['independent_in_windows']:.2%} "
              f"within the windows, {r['independent_corpus']:.2%} over the corpus)")


if __name__ == "__main__":
    main()
