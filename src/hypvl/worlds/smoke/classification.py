"""The smoke world's classification sets drawn: each test split in the set's catalog `layout` (CLIP_benchmark's
webdataset or an image folder, as acquisition leaves it at paper scale), and the pictures its linear-probe sources
are drawn from (`probe_sources`). What each set is: `classification_sets`.
"""

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from hypvl.data.catalog import DatasetInfo, load_dataset_info
from hypvl.data.formats.clip_benchmark_wds import ClipBenchmarkDataset, LabelledImage, write_clip_benchmark_wds
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.data.formats.images import encode_image
from hypvl.io import atomic_directory

from . import render
from .corpora import random_object
from .classification_sets import ALL_CLASSIFICATION_SETS, PCAM_CLASSES, ClassificationSet
from .settings import WorldSettings, rng_for
from .world import SCENES, TEXTURES, leaf_concepts

SST2_WORDS = {
    "negative": ("dull", "awful", "boring", "bland", "tedious", "clumsy", "dreary", "lame"),
    "positive": ("great", "lovely", "superb", "moving", "charming", "brilliant", "joyful", "witty"),
}
SST2_NOUNS = ("film", "movie", "story", "plot", "cast", "script")
# segments a-g of a seven-segment digit as (x1, y1, x2, y2) on a 2x4 grid, and the digits' segments
SEGMENTS = {"a": (0, 0, 2, 0), "b": (2, 0, 2, 2), "c": (2, 2, 2, 4), "d": (0, 4, 2, 4),
            "e": (0, 2, 0, 4), "f": (0, 0, 0, 2), "g": (0, 2, 2, 2)}
DIGIT_SEGMENTS = ("abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg")

TEST_SPLIT = "test"


def world_picture(rng, spec: ClassificationSet, label: str, size: int) -> Image.Image:
    """Draw one image of a world-slicing set whose `spec.label` factor is `label`."""
    leaves = leaf_concepts()
    scene = str(rng.choice(list(SCENES)))
    country = None
    if spec.label == "leaf":
        objects = [render.Placed(next(c for c in leaves if c.name == label),
                                 "large" if spec.style == "large" else str(rng.choice(["small", "large"])),
                                 str(rng.choice(TEXTURES)))]
    elif spec.label == "texture":
        objects = [random_object(rng, leaves, size="full", texture=label)]
    elif spec.label == "scene":
        scene = label
        objects = [] if spec.style == "satellite" else [random_object(rng, leaves, size="small")]
    elif spec.label == "country":
        country = label
        objects = [random_object(rng, leaves)]
    else:
        raise ValueError(f"unknown label factor {spec.label!r}")
    pic = render.Picture(scene=scene, objects=objects, country=country)
    render.place(pic.objects, size, rng)
    image = render.draw(pic, size, rng)
    if spec.style == "lowres":
        image = image.resize((size // 4, size // 4), Image.BILINEAR).resize((size, size), Image.NEAREST)
    return image


def digit_picture(rng, digit: int, size: int) -> Image.Image:
    """A light seven-segment `digit` of random height, stroke, slant and place on a dark ground."""
    image = Image.new("RGB", (size, size), tuple(int(v) for v in rng.integers(0, 40, 3)))
    draw = ImageDraw.Draw(image)
    height = size * rng.uniform(0.45, 0.8)
    unit = height / 4
    x0 = rng.uniform(0.05 * size, size - 2 * unit - 0.05 * size)
    y0 = rng.uniform(0.05 * size, size - height - 0.05 * size)
    slant = rng.uniform(-0.25, 0.25)
    width = max(1, int(round(unit * rng.uniform(0.3, 0.5))))
    ink = tuple(int(v) for v in rng.integers(200, 256, 3))
    for segment in DIGIT_SEGMENTS[digit]:
        gx1, gy1, gx2, gy2 = SEGMENTS[segment]
        points = [(x0 + unit * gx + slant * unit * (4 - gy), y0 + unit * gy) for gx, gy in ((gx1, gy1), (gx2, gy2))]
        draw.line(points, fill=ink, width=width)
    return image


def count_picture(rng, count: int, size: int) -> Image.Image:
    """`count` small non-overlapping world objects on a grey floor (CLEVR-Counts-like)."""
    leaves = leaf_concepts()
    pic = render.Picture(scene="city", objects=[])
    side = max(4, size // 9)
    cells = [(x, y) for y in range(size // side) for x in range(size // side)]
    chosen = rng.choice(len(cells), size=count, replace=False)
    for index in chosen:
        x, y = cells[int(index)]
        obj = random_object(rng, leaves, size="tiny", texture="plain")
        obj.box = (x * side + 1, y * side + 1, x * side + side - 1, y * side + side - 1)
        pic.objects.append(obj)
    return render.draw(pic, size, rng)


def tissue_picture(rng, tumour: bool, size: int) -> Image.Image:
    """A pink, noisy tissue patch; with `tumour`, 3-6 clusters of dark purple nuclei (PCam-like)."""
    canvas = np.array([235, 170, 200], dtype=np.float32) + rng.normal(0, 12, (size, size, 3)).astype(np.float32)
    yy, xx = np.mgrid[0:size, 0:size]
    dots = rng.integers(0, size, (12, 2))
    for cx, cy in dots:  # scattered normal nuclei
        canvas[(xx - cx) ** 2 + (yy - cy) ** 2 <= 2] = (150, 90, 160)
    if tumour:
        for _ in range(int(rng.integers(3, 7))):
            cx, cy = rng.integers(size // 8, size - size // 8, 2)
            radius = rng.uniform(size / 12, size / 7)
            canvas[(xx - cx) ** 2 + (yy - cy) ** 2 <= radius ** 2] = (70, 30, 100)
    return Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))


def verdict_picture(rng, sentiment: str, size: int) -> Image.Image:
    """A two-line movie verdict, e.g. 'a dull' / 'movie', in dark text on a light card (SST2-like)."""
    image = Image.new("RGB", (size, size), tuple(int(v) for v in rng.integers(225, 256, 3)))
    font = ImageFont.load_default(size=max(8, size // 6))
    words = SST2_WORDS[sentiment]
    lines = [f"a {words[rng.integers(len(words))]}", str(SST2_NOUNS[rng.integers(len(SST2_NOUNS))])]
    draw = ImageDraw.Draw(image)
    y = rng.uniform(0.1, 0.4) * size
    for line in lines:
        draw.text((rng.uniform(0.02, 0.15) * size, y), line, fill=(20, 20, 20), font=font)
        y += size // 4
    return image


def classification_picture(rng, spec: ClassificationSet, label: str, size: int) -> Image.Image:
    """Draw one image of a set whose label is class name `label`."""
    if spec.label == "digit":
        return digit_picture(rng, int(label), size)
    if spec.label == "count":
        return count_picture(rng, int(label), size)
    if spec.label == "tissue":
        return tissue_picture(rng, label == PCAM_CLASSES[1], size)
    if spec.label == "sentiment":
        return verdict_picture(rng, label, size)
    return world_picture(rng, spec, label, size)


def write_split(info: DatasetInfo, root: Path, split: str, class_names: tuple[str, ...],
                items: list[tuple[int, Image.Image]], shard_size: int, record_names: bool = False) -> None:
    """Write `items` (label, image), in their order, as split `split` of the set at `root` in `info.layout`: a
    CLIP_benchmark webdataset (PNG images, keys `s<record>`, `shard_size` records a shard, the catalog's prompts as
    its templates) or an image folder (each image named by its record number with `record_names`)."""
    if info.layout == "imagefolder":
        write_imagefolder(root, split, list(class_names), items, record_names=record_names)
        return
    samples = tuple(LabelledImage(f"s{record:07d}", encode_image(image, "PNG"), label)
                    for record, (label, image) in enumerate(items))
    templates = tuple(template.replace("{}", "{c}") for template in info.prompts)
    write_clip_benchmark_wds(root, ClipBenchmarkDataset(tuple(class_names), templates, samples), split, shard_size,
                             "png")


def write_classification_set(settings: WorldSettings, name: str, root: Path) -> dict[str, int]:
    """Write the test split of set `name` under `root/name/` in its catalog layout, `per_class` images per class
    from the streams (name/class, i), class by class; returns its image count."""
    spec = ALL_CLASSIFICATION_SETS[name]
    items = [(label, classification_picture(rng_for(settings.seed, f"{name}/{cls}", i), spec, cls, settings.image_size))
             for label, cls in enumerate(spec.classes) for i in range(settings.per_class)]
    with atomic_directory(root / name) as folder:  # replaces only a set this step wrote (no old images left)
        write_split(load_dataset_info(name), folder, TEST_SPLIT, spec.classes, items, settings.shard_size)
    return {TEST_SPLIT: len(items)}
