"""`hypvl calibrate`: the box threshold that keeps HyCoCLIP's share of a corpus's pairs, found on a raw sample.

HyCoCLIP App. A keeps GLIP's boxes scoring at least 0.65, and grounded RedCaps keeps 5.8M of its 11.4M pairs with 6.3M
boxes (Table 1). The suite's detector (OWLv2) scores on another scale, so its threshold is the one that keeps the
paper's share of pairs (config `grounding.calibration`) on the first raw samples of the corpus: their phrases go
through the box source once, unfiltered, and `BoxFilter(min_box_side, t)` is applied to what it found at every
threshold where the result can change (each record's own scores). The table printed shows the threshold chosen and
the counts around it; the result is written beside the grounded folder (`hypvl.grounding.threshold`), where
`grounding.box_threshold: calibrated` reads it.
"""

import time
from bisect import bisect_left
from contextlib import closing
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from tabulate import tabulate

from hypvl.config import add_config_arguments, config_from_args, positive_int
from hypvl.acquire.mirror import Mirror
from hypvl.errors import InputError
from hypvl.grounding.commands import box_source_for
from hypvl.grounding.filters import CONFIDENCE_THRESHOLD, BoxFilter
from hypvl.grounding.raw import raw_records
from hypvl.grounding.threshold import calibration_file, made_with
from hypvl.io import check_writable, write_json

NEARBY = (0.01, 0.02, 0.05, 0.1)  # thresholds either side of the one chosen, printed and recorded with their counts


@dataclass(frozen=True)
class Kept:
    """What a threshold keeps of the samples: pairs with a box, and boxes."""

    threshold: float
    pairs: int
    boxes: int
    samples: int

    def row(self) -> dict:
        return {"threshold": self.threshold, "pairs": self.pairs, "pair_share": round(self.pairs / self.samples, 4),
                "boxes": self.boxes, "boxes_per_kept_pair": round(self.boxes / max(self.pairs, 1), 4)}


class KeptCurve:
    """What `BoxFilter(min_side, t)` keeps of each sample's candidate boxes, for every threshold t. A sample's kept
    boxes change only at its own scores, so its filter is applied there alone; the changes add up over samples."""

    def __init__(self, candidate_lists, min_side: int):
        self.samples, self.candidates, pairs, boxes = 0, 0, 0, 0
        changes: dict[float, list[int]] = {}  # score -> change in (pairs, boxes) at thresholds above it
        for candidates in candidate_lists:
            self.samples += 1
            self.candidates += len(candidates)
            scores = sorted({candidate["score"] for candidate in candidates})
            counts = [len(BoxFilter(min_side, score).apply(candidates, {})) for score in scores] + [0]
            pairs, boxes = pairs + (counts[0] > 0), boxes + counts[0]  # at thresholds up to its lowest score
            for score, here, above in zip(scores, counts, counts[1:]):
                change = changes.setdefault(score, [0, 0])
                change[0] += (above > 0) - (here > 0)
                change[1] += above - here
        self.scores = sorted(changes)
        self._pairs, self._boxes = [pairs], [boxes]  # [i]: kept at a threshold above i of the scores
        for score in self.scores:
            self._pairs.append(self._pairs[-1] + changes[score][0])
            self._boxes.append(self._boxes[-1] + changes[score][1])

    def at(self, threshold: float) -> Kept:
        """What `BoxFilter(min_side, threshold)` keeps."""
        below = bisect_left(self.scores, threshold)  # scores under the threshold
        return Kept(threshold, self._pairs[below], self._boxes[below], self.samples)

    def ranges(self) -> list[tuple[float, float, Kept]]:
        """(low, high, kept) for each range of thresholds in (low, high] keeping the same (from 0 to 1)."""
        ends = [*self.scores, 1.0] if not self.scores or self.scores[-1] < 1.0 else self.scores
        found, low = [], 0.0
        for high in ends:
            kept = self.at(high)
            if found and (found[-1][2].pairs, found[-1][2].boxes) == (kept.pairs, kept.boxes):
                found[-1] = (found[-1][0], high, found[-1][2])
            else:
                found.append((low, high, kept))
            low = high
        return found


def inside(low: float, high: float) -> float:
    """The number with the fewest decimals strictly between `low` and `high` (their middle where none is found)."""
    middle = (low + high) / 2
    return next((value for digits in range(1, 16) if low < (value := round(middle, digits)) < high), middle)


def choose(curve: KeptCurve, target_share: float, target_boxes_per_pair: float) -> tuple[Kept, float, float]:
    """The threshold whose kept pair share is nearest `target_share` (ties: boxes per kept pair nearest
    `target_boxes_per_pair`, then the higher threshold), as the shortest number inside its range; with the range."""
    def distance(entry):
        low, _, kept = entry
        return (abs(kept.pairs / kept.samples - target_share),
                abs(kept.boxes / max(kept.pairs, 1) - target_boxes_per_pair), -low)

    low, high, _ = min(curve.ranges(), key=distance)
    return curve.at(inside(low, high)), low, high


def candidate_boxes(records, extractor, box_source, batch_size: int):
    """Each record's candidate boxes from `box_source` for its spaCy phrases, unfiltered, in order."""
    records = iter(records)
    while batch := list(islice(records, batch_size)):
        yield from box_source(batch, [extractor.phrases(doc) for doc in extractor.parse(r["caption"] for r in batch)])


def calibrate(candidate_lists, min_side: int, target_share: float, target_boxes_per_pair: float) -> dict:
    """The calibration of a sample's candidate boxes: the threshold chosen, what it keeps, and the counts nearby
    (NEARBY either side, and HyCoCLIP's 0.65)."""
    curve = KeptCurve(candidate_lists, min_side)
    chosen, low, high = choose(curve, target_share, target_boxes_per_pair)
    nearby = {round(chosen.threshold + sign * step, 6) for step in NEARBY for sign in (-1, 1)}
    thresholds = sorted({t for t in nearby if 0 <= t <= 1} | {chosen.threshold, CONFIDENCE_THRESHOLD})
    return {"samples": curve.samples, "candidates": curve.candidates, "box_threshold": chosen.threshold,
            "range": [low, high], "kept": chosen.row(), "nearby": [curve.at(t).row() for t in thresholds]}


def table(result: dict) -> str:
    """The nearby thresholds' counts, the chosen one and the paper's marked."""
    notes = ((result["box_threshold"], "<- chosen"), (CONFIDENCE_THRESHOLD, "HyCoCLIP's (GLIP's scale)"))
    rows = [[f"{row['threshold']:.6g}", row["pairs"], f"{row['pair_share']:.1%}", row["boxes"],
             f"{row['boxes_per_kept_pair']:.2f}", ", ".join(note for at, note in notes if at == row["threshold"])]
            for row in result["nearby"]]
    return tabulate(rows, headers=["threshold", "kept pairs", "share", "boxes", "boxes / kept pair", ""],
                    disable_numparse=True, colalign=("right",) * 5 + ("left",))


def _calibrate(args) -> None:
    from hypvl.runtime.devices import select_device, use_threads
    from hypvl.grounding.phrases import PhraseExtractor

    config = config_from_args(args)
    threads = use_threads(args.threads)
    settings, targets = config["grounding"], config["grounding"]["calibration"]
    corpus = args.corpus or targets["corpus"]
    out = calibration_file(config, corpus)
    raw = settings["raw"][corpus]
    if raw["format"] == "grit":
        raise InputError(f"{corpus}: a GRIT corpus keeps the spans it ships with; calibrate a corpus the detector "
                         "grounds (grounding.calibration.corpus)")
    check_writable(out.parent)
    start = time.perf_counter()
    extractor = PhraseExtractor(config["spacy_model"])
    mirror = Mirror.at(config["fetch"]["mirror"])
    device = select_device(args.device or settings["device"]).type
    box_source = box_source_for(raw["format"], settings["detector"], device, revision=settings.get("detector_revision"),
                                hub_cache=None if mirror is None else mirror.hub, precision=settings["precision"])
    folder, counts = Path(config["data_dir"]) / raw["path"], {}
    with closing(raw_records(raw["format"], folder, settings["detector"] == "oracle", counts,
                             settings["max_skipped_fraction"], threads=threads)) as records:
        found = list(candidate_boxes(islice(records, args.samples or targets["samples"]), extractor, box_source,
                                     settings["batch_size"]))
    if not any(found):
        raise InputError(f"{folder}: the box source found no box in its first {len(found)} samples: nothing to "
                         "calibrate on")
    result = calibrate(found, settings["min_box_side"], targets["target_pair_share"], targets["target_boxes_per_pair"])
    result = {"corpus": corpus, "raw": raw["path"], "made_with": made_with(config, box_source), **result,
              "skipped": {key: value for key, value in counts.items() if value},
              "seconds": round(time.perf_counter() - start, 2)}
    write_json(out, result, indent=1)
    kept = result["kept"]
    print(f"{corpus}: {result['samples']} raw samples, {result['candidates']} candidate boxes "
          f"({settings['detector']}); box threshold {result['box_threshold']:.6g} keeps {kept['pairs']} pairs "
          f"({kept['pair_share']:.1%}, target {targets['target_pair_share']:.1%}) with {kept['boxes']} boxes "
          f"({kept['boxes_per_kept_pair']:.2f} a kept pair, target {targets['target_boxes_per_pair']:.2f})\n"
          f"{table(result)}\nwritten to {out}")


def add_commands(subparsers) -> None:
    """Register `calibrate`."""
    parser = subparsers.add_parser("calibrate", help="find the box threshold keeping HyCoCLIP's share of a corpus")
    add_config_arguments(parser)
    parser.add_argument("--corpus", default=None,
                        help="corpus name (a key of config grounding.raw and corpora; default: config "
                             "grounding.calibration.corpus)")
    parser.add_argument("--samples", type=positive_int, default=None,
                        help="the first raw samples to read (default: config grounding.calibration.samples)")
    parser.add_argument("--device", default=None, help="detector device (default: config grounding.device)")
    parser.add_argument("--threads", type=positive_int, default=1, help="CPU threads (torch's, image decoding)")
    parser.set_defaults(func=_calibrate)
