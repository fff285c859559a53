"""The smoke world's training corpora in their raw on-disk formats, before grounding.

- GRIT-like: `<key>.jpg` + `<key>.json` (caption, noun_chunks, ref_exps with normalised boxes and
  scores), the boxes being the world's own object boxes (GRIT ships its boxes);
- RedCaps-like: `<key>.jpg` + `<key>.json` (caption, subreddit), no boxes;
- CC3M-like: `<key>.jpg` + `<key>.txt`, no boxes, captions hypernymed (more basic-level and
  superordinate nouns, as Conceptual Captions replaces specific names by hypernyms);
- YFCC15M-like: the CLIP subset list, YFCC100M metadata rows and hash-addressed JPEGs
  (`hypvl.data.formats.yfcc`), no boxes; a quarter of the photos have no title and their caption in a
  description wrapped in markup and a link, as Flickr descriptions often are.
RedCaps, CC3M and YFCC15M carry no boxes, so the grounding step needs a detector; at smoke scale it reads the
world's boxes from a side file `oracle_regions.jsonl` instead: for RedCaps made deliberately loose
(grown 20-60%) with scores spread across the 0.65 threshold, as detector grounding of web photos is;
for CC3M a little loose (0-25%) with mostly confident scores; for YFCC15M in between.
"""

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from hypvl.data.formats.cc3m import CC3MSample, write_cc3m
from hypvl.data.formats.grit import GritSample, GroundedSpan, write_grit
from hypvl.data.formats.images import encode_image
from hypvl.data.formats.oracle_regions import write_oracle_regions
from hypvl.data.formats.redcaps import RedCapsSample, write_redcaps
from hypvl.data.formats.yfcc import METADATA, SUBSET, YFCCSample, write_yfcc

from . import captions, render
from .settings import WorldSettings, rng_for
from .world import COUNTRIES, SCENES, TEXTURES, Concept, leaf_concepts


@dataclass(frozen=True)
class CorpusStyle:
    """How a corpus's pictures and boxes are drawn."""

    counts: tuple[int, ...]          # objects per picture ...
    count_p: tuple[float, ...]       # ... with these probabilities
    large_p: float                   # probability that an object is large (else small)
    tiny_p: float                    # probability of an extra tiny captioned object
    level_p: tuple[float, float, float]
    grow: tuple[float, float]        # oracle boxes grown by this fraction about their centre
    score: tuple[float, float]       # oracle box score range
    openings: tuple[str, ...] = tuple(captions.OPENINGS)


STYLES = {
    "grit": CorpusStyle((1, 2, 3), (0.5, 0.3, 0.2), 0.5, 0.2, captions.LEVEL_P, (0.0, 0.0), (0.65, 1.0)),
    "redcaps": CorpusStyle((1, 2), (0.7, 0.3), 0.8, 0.05, captions.LEVEL_P, (0.2, 0.6), (0.4, 0.95),
                           tuple(captions.POST_OPENINGS)),
    "cc3m": CorpusStyle((1, 2), (0.6, 0.4), 0.6, 0.1, captions.HYPERNYMED_LEVEL_P, (0.0, 0.25), (0.55, 1.0)),
    "yfcc15m": CorpusStyle((1, 2), (0.7, 0.3), 0.7, 0.1, captions.LEVEL_P, (0.1, 0.4), (0.5, 1.0)),
}
# corpus -> the on-disk format its raw files are written in (config `grounding.raw.<corpus>.format`)
RAW_FORMATS = {"grit": "grit", "redcaps": "redcaps", "cc3m": "cc3m", "yfcc15m": "yfcc"}


def random_object(rng, leaves: list[Concept], size: str | None = None, texture: str | None = None) -> render.Placed:
    """An object of a random leaf concept, of `size` and `texture` or random ones (small or large)."""
    return render.Placed(
        concept=leaves[rng.integers(len(leaves))],
        size=size or str(rng.choice(["small", "large"])),
        texture=texture or str(rng.choice(TEXTURES)),
    )


def corpus_picture(rng, corpus: str, size: int) -> render.Picture:
    """A training picture of `corpus`'s style; 15% are close-ups of one object (texture visible)."""
    style, leaves = STYLES[corpus], leaf_concepts()
    if rng.random() < 0.15:
        objects = [random_object(rng, leaves, size="full")]
    else:
        n = int(rng.choice(style.counts, p=style.count_p))
        objects = [random_object(rng, leaves, size="large" if rng.random() < style.large_p else "small")
                   for _ in range(n)]
        if rng.random() < style.tiny_p:
            objects.append(random_object(rng, leaves, size="tiny"))
    country = str(rng.choice(list(COUNTRIES))) if rng.random() < 0.5 else None
    pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=objects, country=country)
    render.place(pic.objects, size, rng)
    render.draw(pic, size, rng)
    return pic


def grown_box(box, grow: float, size: int) -> tuple[int, int, int, int]:
    """`box` (x1, y1, x2, y2) grown by `grow` of its width and height about its centre, clipped."""
    x1, y1, x2, y2 = box
    dx, dy = (x2 - x1) * grow / 2, (y2 - y1) * grow / 2
    return (max(0, int(x1 - dx)), max(0, int(y1 - dy)), min(size, int(x2 + dx)), min(size, int(y2 + dy)))


@dataclass(frozen=True)
class CorpusItem:
    """One drawn training sample: key, JPEG bytes, caption, subreddit, and its oracle regions."""

    key: str
    image: bytes
    caption: str
    subreddit: str
    regions: tuple[dict, ...]


def corpus_item(settings: WorldSettings, corpus: str, index: int) -> CorpusItem:
    """The `index`-th sample of training corpus `corpus` (grit, redcaps, cc3m or yfcc15m)."""
    rng = rng_for(settings.seed, corpus, index)
    size, style = settings.image_size, STYLES[corpus]
    pic = corpus_picture(rng, corpus, size)
    text, spans = captions.caption(pic, rng, style.level_p, style.openings)
    regions = []
    for obj, (start, end) in zip(pic.objects, spans):
        grow = float(rng.uniform(*style.grow)) if style.grow[1] > 0 else 0.0
        regions.append({"start": start, "end": end, "text": text[start:end],
                        "box": list(grown_box(obj.box, grow, size)),
                        "score": round(float(rng.uniform(*style.score)), 4)})
    return CorpusItem(f"{corpus}{index:07d}", encode_image(pic.image), text, captions.subreddit(pic), tuple(regions))


def _span(region: dict, size: int, end: int | None = None) -> GroundedSpan:
    x1, y1, x2, y2 = (v / size for v in region["box"])
    return GroundedSpan(region["start"], region["end"] if end is None else end, x1, y1, x2, y2, region["score"])


def grit_sample(item: CorpusItem, size: int) -> GritSample:
    """GRIT record of a corpus item: each object's phrase as a noun chunk; the last object's phrase
    running on to the caption's end (its scene and country) as a referring expression."""
    chunks = tuple(_span(region, size) for region in item.regions)
    last = item.regions[-1]
    ref_exps = (_span(last, size, len(item.caption)),) if last["end"] < len(item.caption) else ()
    return GritSample(item.key, item.image, item.caption, chunks, ref_exps)


YFCC_MISSING_EVERY = 200  # one photo in this many is listed without its image, as ~1% of the real list


def yfcc_sample(item: CorpusItem, index: int) -> YFCCSample:
    """YFCC15M record of a corpus item: a Flickr-like photo id and hash; every fourth photo has no title and its
    caption in a marked-up description with a link, every fourth another has a description too (its objects'
    phrases, the second text SLIP's draw picks from), and one in YFCC_MISSING_EVERY has no image (empty bytes: the
    writer leaves its file out)."""
    photo_id = str(10_000_000 + index)
    photo_hash = hashlib.md5(photo_id.encode()).hexdigest()
    if index % 4 == 3:
        title, description = "", f"<b>{item.caption}</b> http://www.flickr.com/photos/{photo_id}"
    elif index % 4 == 1:
        title, description = item.caption, "; ".join(region["text"] for region in item.regions)
    else:
        title, description = item.caption, ""
    image = b"" if index % YFCC_MISSING_EVERY == YFCC_MISSING_EVERY - 1 else item.image
    return YFCCSample(index + 1, photo_id, photo_hash, title, description, image)


def _batched(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _write_shards(folder: Path, corpus: str, items: Iterable[CorpusItem], shard_size: int,
                  write: Callable[[Path, list[CorpusItem]], None]) -> list[Path]:
    paths = []
    for number, batch in enumerate(_batched(items, shard_size)):
        path = folder / f"{corpus}-{number:06d}.tar"
        write(path, batch)
        paths.append(path)
    return paths


def write_corpus(settings: WorldSettings, corpus: str, folder: Path, count: int,
                 first: Sequence[CorpusItem] = ()) -> list[Path]:
    """Write `count` samples of `corpus`, after the items `first`, as raw shards `<corpus>-NNNNNN.tar` (YFCC15M: its
    subset list, metadata and images) into `folder`, a new folder (`hypvl.worlds.smoke.build` swaps it in), plus the
    oracle side file for box-less formats; returns the shard (metadata) paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    size = settings.image_size
    items = [*first, *(corpus_item(settings, corpus, i) for i in range(count))]
    keys = [item.key for item in items]
    if corpus == "grit":
        return _write_shards(folder, corpus, items, settings.shard_size,
                             lambda path, batch: write_grit(path, (grit_sample(i, size) for i in batch)))
    if corpus == "yfcc15m":
        samples = [yfcc_sample(item, index) for index, item in enumerate(items)]
        write_yfcc(folder, samples)
        shards, keys = [folder / SUBSET, folder / METADATA], [sample.key for sample in samples]
    elif corpus == "redcaps":
        shards = _write_shards(folder, corpus, items, settings.shard_size, lambda path, batch: write_redcaps(
            path, (RedCapsSample(i.key, i.image, i.caption, i.subreddit) for i in batch)))
    elif corpus == "cc3m":
        shards = _write_shards(folder, corpus, items, settings.shard_size, lambda path, batch: write_cc3m(
            path, (CC3MSample(i.key, i.image, i.caption) for i in batch)))
    else:
        raise ValueError(f"unknown corpus {corpus!r}")
    write_oracle_regions(folder, ((key, [{k: r[k] for k in ("text", "box", "score")} for r in item.regions])
                                  for key, item in zip(keys, items)))
    return shards
