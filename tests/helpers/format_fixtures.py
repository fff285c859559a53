"""Fixtures of the real on-disk formats, each written by its writer: BUILDERS[fmt](root) -> (path, expected records,
reader), and the helpers that corrupt them (truncation, edited JSON, edited shard members)."""

import dataclasses
import io
from pathlib import Path

from PIL import Image

from hypvl.data.formats import (
    breeds,
    cc3m,
    clip_benchmark_wds,
    coco_captions,
    coco_instances,
    flickr30k,
    grit,
    grounded,
    hierarcaps,
    hyperlex,
    imagefolder,
    redcaps,
    vg_attribution,
    vlchecklist,
    wordnet_isa,
    yfcc,
)
from hypvl.data.formats.common import CaptionedImage

# ----------------------------------------------------------------------------- fixture helpers


def jpeg_bytes(seed: int, size=(8, 6)) -> bytes:
    """A tiny JPEG whose colour depends on `seed`."""
    buffer = io.BytesIO()
    Image.new("RGB", size, ((40 * seed) % 256, 90, 200)).save(buffer, "JPEG")
    return buffer.getvalue()


def save_image(path: Path, seed: int, size=(8, 6)) -> Path:
    """Write a tiny JPEG at `path` and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jpeg_bytes(seed, size))
    return path


# ----------------------------------------------------------------------------- fixtures per format
# Each builder writes a fixture under `root` with the format's writer and returns
# (path handed to the reader, expected records, reader: path -> records).


def build_redcaps(root):
    samples = [redcaps.RedCapsSample(f"{i:04d}", jpeg_bytes(i), f"caption {i}", "itookapicture") for i in range(3)]
    path = root / "redcaps" / "00000.tar"
    redcaps.write_redcaps(path, samples)
    return path, samples, redcaps.read_redcaps


def build_grit(root):
    caption = "a brown dog on the green grass"
    span = grit.GroundedSpan
    samples = [
        grit.GritSample(
            f"{i:04d}",
            jpeg_bytes(i),
            caption,
            (span(0, 11, 0.1, 0.2, 0.5, 0.9, 0.8), span(19, 30, 0.0, 0.5, 1.0, 1.0, 0.7)),
            (span(0, 30, 0.05, 0.1, 0.95, 1.0, 0.66),) if i % 2 else (),
        )
        for i in range(3)
    ]
    path = root / "grit" / "00000.tar"
    grit.write_grit(path, samples)
    return path, samples, grit.read_grit


def build_cc3m(root):
    samples = [cc3m.CC3MSample(f"{i:09d}", jpeg_bytes(i), f"actor attends the premiere {i}") for i in range(3)]
    path = root / "cc3m" / "00000.tar"
    cc3m.write_cc3m(path, samples)
    return path, samples, cc3m.read_cc3m


def build_yfcc(root):
    samples = [yfcc.YFCCSample(i + 1, str(5000 + i), f"{i:032x}", f"harbour at dusk {i}", "", jpeg_bytes(i))
               for i in range(3)]
    yfcc.write_yfcc(root / "yfcc15m", samples)
    return root / "yfcc15m", samples, yfcc.read_yfcc


def build_clip_benchmark_wds(root):
    samples = tuple(clip_benchmark_wds.LabelledImage(f"s{i:07d}", jpeg_bytes(i), i % 3) for i in range(5))
    dataset = clip_benchmark_wds.ClipBenchmarkDataset(("cat", "dog", "bird"), ("a photo of a {c}.", "itap of a {c}."), samples)
    path = root / "wds_toy"
    clip_benchmark_wds.write_clip_benchmark_wds(path, dataset, samples_per_shard=2)
    return path, dataset, clip_benchmark_wds.read_clip_benchmark_wds


def build_coco_captions(root):
    folder = root / "coco"
    items = [
        CaptionedImage(save_image(folder / "val2017" / f"{i:012d}.jpg", i), tuple(f"caption {j} of image {i}" for j in range(5)))
        for i in range(3)
    ]
    path = folder / "annotations" / "captions_val2017.json"
    coco_captions.write_coco_captions(path, items)
    return path, items, coco_captions.read_coco_captions


def build_flickr30k(root):
    folder = root / "flickr30k"

    def items(split, start):
        return [
            CaptionedImage(save_image(folder / "flickr30k_images" / f"{start + i}.jpg", i), tuple(f"{split} {i} {j}." for j in range(5)))
            for i in range(3)
        ]

    test = items("test", 100)
    path = folder / "dataset_flickr30k.json"
    flickr30k.write_flickr30k(path, {"train": items("train", 0), "test": test})
    return path, test, flickr30k.read_flickr30k


def build_coco_instances(root):
    folder = root / "coco"
    ids = coco_instances.COCO_CATEGORY_IDS
    names = coco_instances.BANSAL_BASE_CATEGORIES + coco_instances.BANSAL_NOVEL_CATEGORIES
    categories = tuple(coco_instances.Category(ids[name], name, "thing") for name in sorted(names, key=ids.get))
    box = coco_instances.Box
    images = tuple(
        coco_instances.DetectionImage(
            image_id,
            save_image(folder / "val2017" / f"{image_id:012d}.jpg", image_id, (40, 30)),
            40,
            30,
            (box(ids["dog"], (1.0, 2.0, 10.0, 12.5), False), box(ids["person"], (0.0, 0.0, 40.0, 30.0), image_id == 2)),
        )
        for image_id in (1, 2, 5)
    )
    instances = coco_instances.CocoInstances(categories, images)
    path = folder / "annotations" / "instances_val2017.json"
    coco_instances.write_coco_instances(path, instances)
    return path, instances, coco_instances.read_coco_instances


def build_vlchecklist(root):
    folder = root / "vl-checklist"
    items = [
        vlchecklist.CheckListItem(save_image(folder / "vg" / "VG_100K" / f"{i}.jpg", i), (f"drain ON sidewalk {i}",), (f"pole ON sidewalk {i}",))
        for i in range(3)
    ]
    path = folder / "data" / "Object" / "Size" / "vg_size" / "vg_obj_small.json"
    vlchecklist.write_vlchecklist(path, items, folder / "vg")
    return path, items, lambda p: vlchecklist.read_vlchecklist(p, folder / "vg")


def build_vlchecklist_corpus(root):
    annotation, items, _ = build_vlchecklist(root)
    folder = root / "vl-checklist"
    path = folder / "corpus" / "v1" / "Object" / "Size" / "small" / "vg_obj.yaml"
    vlchecklist.write_corpus(path, annotation, folder / "vg")
    return path, items, lambda p: vlchecklist.read_vlchecklist_corpus(p)[1]


def build_vg_attribution(root):
    folder = root / "aro"
    items = [
        vg_attribution.AttributionItem(
            save_image(folder / "images" / f"{i}.jpg", i, (20, 20)),
            (1.0, 2.0, 10.0 + i, 8.0),
            "the white plate and the brown table",
            "the brown plate and the white table",
            ("white", "brown"),
        )
        for i in range(3)
    ]
    path = folder / "visual_genome_attribution.json"
    vg_attribution.write_vg_attribution(path, items)
    return path, items, vg_attribution.read_vg_attribution


def build_hierarcaps_test(root):
    folder = root / "hierarcaps"
    items = []
    for i, coco_id in enumerate((301718, 100489, 301718)):
        name = f"COCO_val2014_{coco_id:012d}.jpg"
        image = save_image(folder / "assets" / "test_imgs" / name, i)
        captions = ("table", "table with plates", f"table with {i} plates, with man", f"A table with {i} plates, and a man.")
        items.append(hierarcaps.HierarCapsItem(i, captions, f"http://images.cocodataset.org/val2014/{name}", image))
    path = folder / "data" / "hierarcaps_test.csv"
    hierarcaps.write_hierarcaps_test(path, items)
    return path, items, hierarcaps.read_hierarcaps_test


def build_hierarcaps_train(root):
    pairs = [
        hierarcaps.HierarCapsPair(
            ("animal", "dog", "dog on grass", f"a dog runs on the grass, {i}"),
            ("vehicle", "car", "car on road", f"a car drives on the road, {i}"),
        )
        for i in range(3)
    ]
    path = root / "hierarcaps" / "data" / "hierarcaps_train.csv.gz"
    hierarcaps.write_hierarcaps_train(path, pairs)
    return path, pairs, hierarcaps.read_hierarcaps_train


def build_wordnet_isa(root):
    edges = [wordnet_isa.IsaEdge(p, c) for p, c in (("n00001740", "n00021939"), ("n00021939", "n02084071"), ("n00021939", "n02121808"))]
    path = root / "imagenet_synset" / "imagenet_isa.txt"
    wordnet_isa.write_wordnet_isa(path, edges)
    return path, edges, wordnet_isa.read_wordnet_isa


def build_hyperlex(root):
    pairs = [
        hyperlex.HyperLexPair("highway", "road", "N", "hyp-1", 5.8, 9.67, 0.4, (5, 6, 6, 6, 6)),
        hyperlex.HyperLexPair("mascara", "lipstick", "N", "cohyp", 0.71, 1.18, 1.33, (0, 1, 2)),
        hyperlex.HyperLexPair("run", "move", "V", "hyp-2", 4.5, 7.5, 1.0, (4, 5)),
    ]
    path = root / "hyperlex" / "hyperlex-all.txt"
    hyperlex.write_hyperlex(path, pairs)
    return path, pairs, hyperlex.read_hyperlex


BREEDS_HIERARCHY = breeds.BreedsHierarchy(
    classes=tuple(
        breeds.BreedsClass(i, wnid, name)
        for i, (wnid, name) in enumerate((("n02085620", "Chihuahua"), ("n02123045", "tabby"), ("n02085782", "Japanese spaniel"), ("n02123159", "tiger cat")))
    ),
    edges=tuple(
        wordnet_isa.IsaEdge(p, c)
        for p, c in (
            ("n00001740", "n02084071"), ("n00001740", "n02121808"), ("n02084071", "n02085620"),
            ("n02084071", "n02085782"), ("n02121808", "n02123045"), ("n02121808", "n02123159"),
        )
    ),  # fmt: skip
    node_names={"n00001740": "entity", "n02084071": "dog, domestic dog", "n02121808": "domestic cat, house cat"},
)


def build_breeds(root):
    path = root / "breeds"
    breeds.write_breeds_hierarchy(path, BREEDS_HIERARCHY)
    return path, BREEDS_HIERARCHY, breeds.read_breeds_hierarchy


def build_breeds_split(root):
    superclasses = [breeds.BreedsSuperclass(0, "n02084071", "dog", (0,), (2,)), breeds.BreedsSuperclass(1, "n02121808", "cat", (1,), (3,))]
    path = root / "breeds" / "toy_split.json"
    breeds.write_breeds_split(path, superclasses)
    return path, superclasses, breeds.read_breeds_split


def build_grounded(root):
    records = [grounded.GroundedRecord(f"s{i:03d}", jpeg_bytes(i),
                                       f"caption {i}", [(jpeg_bytes(10 + i), f"box {i}")] * (i % 2))
               for i in range(3)]
    [path] = grounded.write_grounded_shards(records, root / "grounded")
    expected = [dataclasses.replace(r, source=str(path)) for r in records]
    return path, expected, lambda p: list(grounded.iter_grounded(p))


def build_imagefolder(root):
    items = [(i % 2, Image.new("RGB", (6, 6), (0, 40 * i, 0))) for i in range(4)]
    imagefolder.write_imagefolder(root / "toy", "test", ["dog", "cat"], items)
    split = root / "toy" / "test"
    expected = sorted((p, int(p.parent.name)) for p in split.glob("*/*.png"))
    return split, expected, lambda p: list(imagefolder.iter_imagefolder(p))


BUILDERS = {
    "redcaps": build_redcaps,
    "grit": build_grit,
    "cc3m": build_cc3m,
    "yfcc": build_yfcc,
    "grounded": build_grounded,
    "imagefolder": build_imagefolder,
    "clip_benchmark_wds": build_clip_benchmark_wds,
    "coco_captions": build_coco_captions,
    "flickr30k": build_flickr30k,
    "coco_instances": build_coco_instances,
    "vlchecklist": build_vlchecklist,
    "vlchecklist_corpus": build_vlchecklist_corpus,
    "vg_attribution": build_vg_attribution,
    "hierarcaps_test": build_hierarcaps_test,
    "hierarcaps_train": build_hierarcaps_train,
    "wordnet_isa": build_wordnet_isa,
    "hyperlex": build_hyperlex,
    "breeds": build_breeds,
    "breeds_split": build_breeds_split,
}


def check_options(fmt: str, fixture: Path) -> dict:
    """Options `hypvl data check` needs for a fixture: VL-CheckList files do not name their image folder."""
    return {"image_root": fixture.parents[4] / "vg"} if fmt == "vlchecklist" else {}


def records_of(fmt: str, expected):
    """The record list that `hypvl data check` counts for a fixture's expected value."""
    return {
        "clip_benchmark_wds": lambda e: list(e.samples),
        "coco_instances": lambda e: list(e.images),
        "breeds": lambda e: list(e.classes),
    }.get(fmt, list)(expected)


# ----------------------------------------------------------------------------- round trips
