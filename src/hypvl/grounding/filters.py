"""HyCoCLIP App. A box filters, and the box crops (border-resized squares) its shards hold.

Box size: the paper "exclude[s] boxes with sizes lower than 32x32"; the reference code
(`prepare_GRIT_webdataset.py`) keeps a box only if `(x2-x1)*(y2-y1) > 32*32` in original
image pixels. We follow the code, which made the released training data: an area test, strict,
so a 32x32 box (area exactly 1024) is dropped and a 16x80 box (area 1280) is kept.
Confidence: "at least 0.65", so a score equal to the threshold is kept.
"""

from dataclasses import dataclass

from hypvl.data.formats.images import border_resize

MIN_BOX_SIDE = 32
CONFIDENCE_THRESHOLD = 0.65
CROP_SIZE = 224


@dataclass(frozen=True)
class BoxFilter:
    """The paper's box filters: min area `min_side**2` (strict), score >= `threshold`."""

    min_side: int = MIN_BOX_SIDE
    threshold: float = CONFIDENCE_THRESHOLD

    def large_enough(self, box):
        """True if box [x1, y1, x2, y2] (pixels) has area > min_side**2."""
        x1, y1, x2, y2 = box
        return (x2 - x1) * (y2 - y1) > self.min_side * self.min_side

    def confident(self, score):
        """True if the grounding score reaches the threshold."""
        return score >= self.threshold

    def apply(self, candidates, counts):
        """Kept candidates ({phrase, box, score} dicts) in order: confident, large enough, and
        the first for their phrase text. `counts` (a dict) gains the dropped numbers under
        boxes_below_threshold, boxes_too_small, boxes_duplicate_phrase."""
        kept, phrases = [], set()
        for candidate in candidates:
            if not self.confident(candidate["score"]):
                reason = "boxes_below_threshold"
            elif not self.large_enough(candidate["box"]):
                reason = "boxes_too_small"
            elif candidate["phrase"] in phrases:
                reason = "boxes_duplicate_phrase"
            else:
                phrases.add(candidate["phrase"])
                kept.append(candidate)
                continue
            counts[reason] = counts.get(reason, 0) + 1
        return kept


def clip_box(box, width, height):
    """Box [x1, y1, x2, y2] clipped to the image [0, width] x [0, height]."""
    x1, y1, x2, y2 = box
    return [min(max(x1, 0.0), width), min(max(y1, 0.0), height),
            min(max(x2, 0.0), width), min(max(y2, 0.0), height)]


def crop_box(image, box, size=CROP_SIZE):
    """The region `box` [x1, y1, x2, y2] (pixels) of `image`, border-resized to a `size` square:
    longest side -> size, centred on white (HyCoCLIP's `Resizer(224, "border")`)."""
    return border_resize(image.crop(tuple(round(v) for v in box)), size)
