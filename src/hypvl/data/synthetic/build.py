"""Write the smoke world to disk in the real formats: grounded training corpora and classification sets.

Every picture is drawn from its own random generator seeded by (seed, set, index), so any file can be
regenerated alone and the whole world is identical across runs and machines.
"""

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from hypvl.data.formats.grounded import GroundedRecord, write_grounded_shards
from hypvl.data.formats.images import border_resize, encode_image
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.io import atomic_write

from . import captions, render
from .world import COUNTRIES, SCENES, TAXONOMY, TEXTURES, Concept, isa_edges, leaf_concepts

CIFAR10_LEAVES = ["beagle", "siamese", "sparrow", "eagle", "sedan", "truck", "airliner", "pizza", "rose", "husky"]
STL10_LEAVES = ["poodle", "tabby", "owl", "parrot", "bus", "jeep", "helicopter", "jet", "cake", "tulip"]


@dataclass(frozen=True)
class ClassificationSet:
    """How a smoke classification set slices the world: what its label is and how it is drawn."""

    label: str           # leaf | scene | texture | country
    classes: tuple[str, ...]
    style: str = "normal"  # normal | lowres | large | scene | satellite | texture | country


def _leaves(*basics: str) -> tuple[str, ...]:
    return tuple(c.name for c in leaf_concepts() if not basics or c.basic in basics)


CLASSIFICATION_SETS = {
    "imagenet": ClassificationSet("leaf", _leaves()),
    "cifar10": ClassificationSet("leaf", tuple(CIFAR10_LEAVES), "lowres"),
    "cifar100": ClassificationSet("leaf", _leaves(), "lowres"),
    "sun397": ClassificationSet("scene", tuple(SCENES), "scene"),
    "caltech101": ClassificationSet("leaf", _leaves(), "large"),
    "stl10": ClassificationSet("leaf", tuple(STL10_LEAVES), "large"),
    "food101": ClassificationSet("leaf", _leaves("dish")),
    "cub": ClassificationSet("leaf", _leaves("bird")),
    "cars": ClassificationSet("leaf", _leaves("car")),
    "aircraft": ClassificationSet("leaf", _leaves("aircraft")),
    "pets": ClassificationSet("leaf", _leaves("dog", "cat")),
    "flowers": ClassificationSet("leaf", _leaves("flower")),
    "dtd": ClassificationSet("texture", tuple(TEXTURES), "texture"),
    "eurosat": ClassificationSet("scene", ("forest", "desert", "ocean", "farmland", "city", "snowfield"), "satellite"),
    "resisc45": ClassificationSet("scene", tuple(SCENES), "scene"),
    "country211": ClassificationSet("country", tuple(COUNTRIES), "country"),
}


@dataclass(frozen=True)
class WorldSettings:
    """Sizes of the smoke world (config `smoke_world`)."""

    seed: int = 0
    image_size: int = 64
    grit_samples: int = 6000
    redcaps_samples: int = 4000
    per_class: int = 20
    shard_size: int = 1000


def _rng(seed: int, name: str, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), index])


def _random_object(rng, leaves: list[Concept], size: str | None = None, texture: str | None = None):
    return render.Placed(
        concept=leaves[rng.integers(len(leaves))],
        size=size or str(rng.choice(["small", "large"])),
        texture=texture or str(rng.choice(TEXTURES)),
    )


def corpus_picture(rng, corpus: str, size: int) -> render.Picture:
    """A training picture: GRIT-like (1-3 objects of any size) or RedCaps-like (1-2, mostly large);
    15% are close-ups of one object."""
    leaves = leaf_concepts()
    if rng.random() < 0.15:  # a close-up, where the surface texture is what one sees
        objects = [_random_object(rng, leaves, size="full")]
    elif corpus == "grit":
        n = int(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2]))
        objects = [_random_object(rng, leaves) for _ in range(n)]
    else:
        n = int(rng.choice([1, 2], p=[0.7, 0.3]))
        objects = [_random_object(rng, leaves, size="large" if rng.random() < 0.8 else "small") for _ in range(n)]
    country = str(rng.choice(list(COUNTRIES))) if rng.random() < 0.5 else None
    pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=objects, country=country)
    render.place(pic.objects, size, rng)
    render.draw(pic, size, rng)
    return pic


def _loose(box, size: int, rng) -> tuple[int, int, int, int]:
    """A badly localised box (RedCaps-like grounding): grown by 20-60% about its centre."""
    grow = rng.uniform(0.2, 0.6)
    x1, y1, x2, y2 = box
    dx, dy = (x2 - x1) * grow / 2, (y2 - y1) * grow / 2
    return (max(0, int(x1 - dx)), max(0, int(y1 - dy)), min(size, int(x2 + dx)), min(size, int(y2 + dy)))


def corpus_record(settings: WorldSettings, corpus: str, index: int) -> GroundedRecord:
    """The `index`-th sample of a training corpus as a grounded record (oracle boxes)."""
    rng = _rng(settings.seed, corpus, index)
    size = settings.image_size
    pic = corpus_picture(rng, corpus, size)
    text, spans = captions.caption(pic, rng)
    boxes = []
    keep_boxes = corpus == "grit" or rng.random() < 0.55  # grounding keeps ~half of RedCaps
    for obj, (start, end) in zip(pic.objects, spans):
        box = obj.box if corpus == "grit" else _loose(obj.box, size, rng)
        if keep_boxes:
            crop = border_resize(pic.image.crop(box), size)
            boxes.append((encode_image(crop), text[start:end]))
    if corpus == "redcaps" and rng.random() < 0.5:
        text = f"{captions.subreddit(pic)} : {text}"
    return GroundedRecord(f"{corpus}{index:07d}", encode_image(pic.image), text, boxes)


def classification_picture(rng, spec: ClassificationSet, label: str, size: int) -> Image.Image:
    """Draw one test image whose `spec.label` factor is `label`."""
    leaves = leaf_concepts()
    scene = str(rng.choice(list(SCENES)))
    country = None
    if spec.label == "leaf":
        objects = [render.Placed(next(c for c in leaves if c.name == label),
                                 "large" if spec.style == "large" else str(rng.choice(["small", "large"])),
                                 str(rng.choice(TEXTURES)))]
    elif spec.label == "texture":
        objects = [_random_object(rng, leaves, size="full", texture=label)]
    elif spec.label == "scene":
        scene = label
        objects = [] if spec.style == "satellite" else [_random_object(rng, leaves, size="small")]
    elif spec.label == "country":
        country = label
        objects = [_random_object(rng, leaves)]
    else:
        raise ValueError(f"unknown label factor {spec.label!r}")
    pic = render.Picture(scene=scene, objects=objects, country=country)
    render.place(pic.objects, size, rng)
    image = render.draw(pic, size, rng)
    if spec.style == "lowres":
        image = image.resize((size // 4, size // 4), Image.BILINEAR).resize((size, size), Image.NEAREST)
    return image


def write_classification_set(settings: WorldSettings, name: str, root: Path) -> int:
    """Write the smoke version of classification set `name` as an image folder; returns its size."""
    spec = CLASSIFICATION_SETS[name]
    items = []
    for label, cls in enumerate(spec.classes):
        for i in range(settings.per_class):
            rng = _rng(settings.seed, f"{name}/{cls}", i)
            items.append((label, classification_picture(rng, spec, cls, settings.image_size)))
    write_imagefolder(root / name, "test", list(spec.classes), items)
    return len(items)


def build_world(settings: WorldSettings, out: Path) -> dict:
    """Write corpora and classification sets under `out`; returns (and writes) the manifest."""
    out = Path(out)
    manifest = {"settings": settings.__dict__, "corpora": {}, "classification": {}}
    for corpus, count in (("grit", settings.grit_samples), ("redcaps", settings.redcaps_samples)):
        records = (corpus_record(settings, corpus, i) for i in range(count))
        shards = write_grounded_shards(records, out / "train" / corpus, settings.shard_size, corpus)
        manifest["corpora"][corpus] = {"samples": count, "shards": [str(p.relative_to(out)) for p in shards]}
    for name in CLASSIFICATION_SETS:
        manifest["classification"][name] = write_classification_set(settings, name, out / "eval" / "classification")
    manifest["hierarchy"] = {"isa": isa_edges(), "taxonomy": {k: list(v) for k, v in TAXONOMY.items()}}
    with atomic_write(out / "manifest.json") as handle:
        json.dump(manifest, handle, indent=1)
    return manifest
