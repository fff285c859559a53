"""Seconds of the smoke data stage: `hypvl synthesize`, then `hypvl ground` for each corpus the
flagship table trains on, at the default config (or `--configfile` overrides), on one core.

    HF_HUB_OFFLINE=1 python benchmarks/data_stage.py --out /tmp/smoke-data

Reports wall and process CPU seconds per step (CPU seconds are what one idle core would take),
and each corpus's grounding throughput in captions per second once spaCy is loaded.
"""

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from hypvl.config import load_config  # noqa: E402
from hypvl.worlds.smoke.build import WorldSettings, build_world  # noqa: E402
from hypvl.grounding.commands import box_source_for, ground_corpus  # noqa: E402
from hypvl.grounding.filters import BoxFilter  # noqa: E402
from hypvl.grounding.phrases import PhraseExtractor  # noqa: E402


def timed(label, step):
    """Run `step()`, print its wall and CPU seconds, return its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = step()
    print(f"{label}: {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the data (data_dir)")
    parser.add_argument("--configfile", action="append", default=[])
    parser.add_argument("--corpora", nargs="*", default=["grit", "redcaps"])
    args = parser.parse_args()
    config, out = load_config(args.configfile), Path(args.out)
    settings = config["grounding"]
    raw = {corpus: entry["path"] for corpus, entry in settings["raw"].items()}
    timed("synthesize", lambda: build_world(WorldSettings(**config["smoke_world"]), out, raw,
                                            config["eval"]["datasets"], config["eval"]["classification_dir"],
                                            config["eval"]["probe_source_dir"]))
    extractor = timed("load spaCy", lambda: PhraseExtractor(config["spacy_model"]))
    for corpus in args.corpora:
        fmt = settings["raw"][corpus]["format"]
        start = time.perf_counter()
        result = timed(f"ground {corpus}", lambda: ground_corpus(
            out / raw[corpus], fmt, out / config["corpora"][corpus], corpus, extractor,
            box_source_for(fmt, settings["detector"]), BoxFilter(settings["min_box_side"], settings["box_threshold"]),
            settings["crop_size"], settings["batch_size"], 1000, settings["detector"] == "oracle"))
        counts = result["counts"]
        print(f"  {counts['samples_grounded']} of {counts['samples_out']} samples with {counts['boxes_kept']} boxes, "
              f"{counts['samples_in'] / (time.perf_counter() - start):.0f} captions/s")


if __name__ == "__main__":
    main()
