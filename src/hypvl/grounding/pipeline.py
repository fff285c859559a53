"""The grounding pipeline of HyCoCLIP App. A over image-caption records.

caption -> spaCy phrases (+ dependency parse) -> candidate boxes from a box source (a detector,
or the record's own boxes at smoke scale) -> BoxFilter -> square crops. A GRIT record brings its phrases and boxes
(`grit_record`: its spans, as HyCoCLIP's `prepare_GRIT_webdataset.py` takes them); spaCy only parses its caption.
Every sample is kept, those left without a box with none (the models without boxes, CLIP, MERU, PoinCLIP and
syntax-preserving MERU, and HyCoCLIP's "w/ boxes" baselines train on every RedCaps pair: HyCoCLIP Table 1's 11.4M, of
which 5.8M keep a box; HyCoCLIP's own stream drops the others, its App. A step 6, `hypvl.train.data`), unless
`keep_boxless` is off: GRIT and CC3M are written as HyCoCLIP's code writes them, only the samples with a box, which
every model trained on them reads (HyCoCLIP Table 1 prints GRIT's 20.5M pairs for CLIP and MERU too).
Output records are in memory; the grounded shard writer stores them.
"""

import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from itertools import islice

from hypvl.data.formats.images import decode_image, encode_image
from hypvl.errors import InputError
from hypvl.grounding.filters import BoxFilter, CROP_SIZE, crop_box
from hypvl.grounding.parses import parse_record
from hypvl.grounding.phrases import Phrase

ARTICLES = {"a", "an", "the"}


def normalise_phrase(text):
    """Lower-cased words of `text` without leading articles, e.g. "The red dog" -> "red dog"."""
    words = re.findall(r"[\w'-]+", text.lower())
    while words and words[0] in ARTICLES:
        words = words[1:]
    return " ".join(words)


class OracleBoxes:
    """Box source reading boxes already in each record (the smoke world's own objects).

    A record holds `regions`: a list of {"text": str, "box": [x1, y1, x2, y2] pixels,
    optional "score"} (the smoke world's `oracle_regions.jsonl`). A phrase gets the box of the
    region with the same text (articles and case aside), else of the longest region text that
    occurs in the phrase as whole words and ends with the phrase's head noun ("red dog" and
    "dog" ground "a big red dog next to a car"; "car" does not); score is the region's, 1.0 if
    absent.
    """

    def __init__(self, field="regions"):
        self.field = field

    def _match(self, phrase, regions):
        """The region grounding `phrase` (a `Phrase`), or None."""
        target = normalise_phrase(phrase.text)
        head = phrase.head.lower()
        best, best_len = None, 0
        for region in regions:
            text = normalise_phrase(region["text"])
            if text == target:
                return region
            if (text and text.split()[-1] == head and f" {text} " in f" {target} "
                    and len(text) > best_len):
                best, best_len = region, len(text)
        return best

    def __call__(self, records, phrase_lists):
        """Candidates [{phrase (text), box, score}] per record, for the `Phrase`s that match a
        region."""
        results = []
        for record, phrases in zip(records, phrase_lists):
            if self.field not in record:
                raise InputError(f"record {record.get('key')!r}: no {self.field!r} for oracle boxes")
            found = []
            for phrase in phrases:
                region = self._match(phrase, record[self.field])
                if region is not None:
                    found.append({"phrase": phrase.text, "box": [float(v) for v in region["box"]],
                                  "score": float(region.get("score", 1.0))})
            results.append(found)
        return results


class NoBoxes:
    """Box source of a corpus no experiment reads boxes of (`hypvl ground --no-boxes`): none, and no detector run."""

    def __call__(self, records, phrase_lists):
        return [[] for _ in records]


class SpanBoxes:
    """Box source of records that bring their boxes (`grit_record`'s spans): each span's box, as a candidate."""

    def __call__(self, records, phrase_lists):
        return [[{"phrase": phrase.text, "box": box, "score": score} for phrase, box, score in record["spans"]]
                for record in records]


def grit_record(sample, where):
    """A `ground` record from a GRIT-format sample (`hypvl.data.formats.grit.GritSample`): the image decoded, and its
    spans as HyCoCLIP's `prepare_GRIT_webdataset.py` takes them, for `SpanBoxes`: the noun chunks, then the
    referring expressions, each text `caption[start:end]` once (its first span, even where that box is too small to
    keep and a later one is not), the box in pixels truncated to whole ones (`int(x1 * width)`, ...). `where` names
    the shard for a decoding error."""
    image = decode_image(sample.image, f"{where}: sample {sample.key!r}")
    width, height = image.size
    spans, seen = [], set()
    for kind, entries in (("noun_chunk", sample.noun_chunks), ("referring_expression", sample.ref_exps)):
        for span in entries:
            text = sample.caption[span.start:span.end]
            if text not in seen:
                seen.add(text)
                box = [float(int(span.x1 * width)), float(int(span.y1 * height)), float(int(span.x2 * width)),
                       float(int(span.y2 * height))]
                spans.append((Phrase(text, span.start, span.end, kind, ""), box, span.score))
    return {"key": sample.key, "image": image, "caption": sample.caption, "spans": spans}


@contextmanager
def thread_pool(threads: int):
    """A pool of `threads` threads whose work not yet started is dropped where the block ends early (an error,
    Ctrl-C): only what is running is waited for."""
    pool = ThreadPoolExecutor(threads)
    try:
        yield pool
    finally:
        pool.shutdown(cancel_futures=True)


def _batches(iterable, size):
    """Successive lists of up to `size` items."""
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch


def ground(records, phrase_extractor, box_source, box_filter=BoxFilter(), crop_size=CROP_SIZE,
           batch_size=32, counts=None, threads=1, keep_boxless=True):
    """Yield every image-caption record grounded, in order: with the boxes that pass the filters, none where none
    does (without `keep_boxless`, only those with a box).

    records: iterable of {"key", "image" (PIL), "caption", ...}; phrase_extractor: a
    `PhraseExtractor`; box_source: callable (records, `Phrase` lists) -> candidate lists
    (`OracleBoxes`, `SpanBoxes` or a `PhraseGroundingDetector`); a record with "spans" brings its own phrases.
    Each yielded sample is the record's own fields plus "boxes": [{"phrase", "box" [x1,y1,x2,y2] pixels, "score"}],
    "crops": [JPEG bytes of a crop_size x crop_size square, one per box] and "parse": a `parse_record` dict.
    `counts` (dict, optional) is filled with samples_in, samples_out (the samples yielded), samples_grounded
    (those with a box), samples_no_phrase, samples_no_box (phrases, but no box kept), boxes_proposed, boxes_kept and
    the per-filter dropped box counts.
    The box source finds a batch's boxes in a thread of its own while the next batch is read and parsed (a GPU
    detector's forward pass overlaps the CPU's work), and `threads` threads cut and encode the crops (Pillow
    releases the GIL there): the samples and counts are those of one thread.
    """
    counts = {} if counts is None else counts
    for key in ("samples_in", "samples_out", "samples_grounded", "samples_no_phrase", "samples_no_box",
                "boxes_proposed", "boxes_kept", "boxes_below_threshold", "boxes_too_small",
                "boxes_duplicate_phrase"):
        counts.setdefault(key, 0)
    with thread_pool(1) as detecting, thread_pool(threads) as cropping:
        ahead = deque()
        for batch in _batches(records, batch_size):
            docs = list(phrase_extractor.parse(record["caption"] for record in batch))
            phrase_lists = [[phrase for phrase, _, _ in record["spans"]] if "spans" in record
                            else phrase_extractor.phrases(doc) for record, doc in zip(batch, docs)]
            ahead.append((batch, docs, phrase_lists, detecting.submit(box_source, batch, phrase_lists)))
            if len(ahead) > 1:
                yield from _filtered(*ahead.popleft(), box_filter, crop_size, counts, cropping, keep_boxless)
        while ahead:
            yield from _filtered(*ahead.popleft(), box_filter, crop_size, counts, cropping, keep_boxless)


def _filtered(batch, docs, phrase_lists, detected, box_filter, crop_size, counts, cropping, keep_boxless):
    """The samples of one batch whose candidate boxes are being `detected` (a future), counted into `counts`; those
    without a box only where `keep_boxless`."""
    kept_lists = []
    for record, phrases, candidates in zip(batch, phrase_lists, detected.result()):
        counts["samples_in"] += 1
        counts["boxes_proposed"] += len(candidates)
        kept = box_filter.apply(candidates, counts) if phrases else []
        counts["samples_no_phrase"] += not phrases
        counts["samples_no_box"] += bool(phrases) and not kept
        counts["samples_out"] += bool(kept) or keep_boxless
        counts["samples_grounded"] += bool(kept)
        counts["boxes_kept"] += len(kept)
        kept_lists.append(kept)
    crops = cropping.map(_encoded_crops, [record["image"] for record in batch], kept_lists, [crop_size] * len(batch))
    for record, doc, kept, encoded in zip(batch, docs, kept_lists, crops):
        if kept or keep_boxless:
            yield {**record, "boxes": kept, "crops": encoded, "parse": parse_record(doc)}


def _encoded_crops(image, boxes, crop_size):
    return [encode_image(crop_box(image, box["box"], crop_size)) for box in boxes]
