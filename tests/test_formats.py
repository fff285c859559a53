"""Readers and writers of the real on-disk formats: round trips, independent parsers, and rejection of bad input.

Every format gets a fixture written by its writer into tmp_path. Each rejection test corrupts the
fixture (truncation, a missing field, a wrong type, a missing image) and requires an InputError whose
message names the file, the record and the problem.
"""

import argparse
import dataclasses
import gzip
import io
import json
import re
import tarfile
from pathlib import Path

import pytest
import webdataset
from PIL import Image
from pycocotools.coco import COCO

from hypvl.data import check as data_check
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
from hypvl.data.formats.shards import iter_tar_samples, write_tar_samples
from hypvl.errors import InputError

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


def edit_json(path: Path, edit) -> None:
    """Load a JSON file, let `edit` change it in place, write it back."""
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def truncate(path: Path, fraction: float = 0.5) -> None:
    """Keep only the first `fraction` of the file's bytes."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])


def edit_shard(path: Path, key: str, edit) -> None:
    """Rewrite one shard with `edit(members)` applied to the members of sample `key`."""
    samples = [(k, dict(members)) for k, _, members in iter_tar_samples(path)]
    for k, members in samples:
        if k == key:
            edit(members)
    write_tar_samples(path, samples)


def edit_shard_json(path: Path, key: str, edit) -> None:
    """Rewrite the `.json` member of sample `key` with `edit(meta)` applied."""

    def change(members):
        meta = json.loads(members["json"])
        edit(meta)
        members["json"] = json.dumps(meta).encode()

    edit_shard(path, key, change)


def delete(key):
    """An edit deleting `key` from a dict."""
    return lambda data: data.pop(key)


def assign(key, value):
    """An edit setting `key` of a dict."""
    return lambda data: data.__setitem__(key, value)


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


def test_every_registered_format_has_a_fixture():
    assert set(BUILDERS) == set(data_check.FORMATS)


@pytest.mark.parametrize("fmt", sorted(BUILDERS))
def test_round_trip(tmp_path, fmt):
    path, expected, read = BUILDERS[fmt](tmp_path)
    assert read(path) == expected


@pytest.mark.parametrize("fmt", sorted(BUILDERS))
def test_check_counts_and_shows_the_first_record(tmp_path, fmt):
    path, expected, _ = BUILDERS[fmt](tmp_path)
    records = records_of(fmt, expected)
    count, first = data_check.check(fmt, path, **check_options(fmt, path))
    assert (count, first) == (len(records), records[0])
    shown = json.loads(data_check.describe(first))
    if fmt in ("redcaps", "grit", "cc3m", "yfcc", "clip_benchmark_wds"):
        assert shown["image"] == f"<{len(first.image)} bytes>"


def test_shards_are_plain_webdataset(tmp_path):
    """The webdataset library (an independent tar reader) sees the same keys, captions and images."""
    path, samples, _ = build_redcaps(tmp_path)
    loaded = list(webdataset.WebDataset(str(path), shardshuffle=False))
    assert [s["__key__"] for s in loaded] == [s.key for s in samples]
    assert [json.loads(s["json"])["caption"] for s in loaded] == [s.caption for s in samples]
    assert [s["jpg"] for s in loaded] == [s.image for s in samples]


def test_clip_benchmark_layout_matches_build_wds_dataset(tmp_path):
    """Files and shard names as CLIP_benchmark's build_wds_dataset expects; labels read by webdataset."""
    root, dataset, _ = build_clip_benchmark_wds(tmp_path)
    assert (root / "test" / "nshards.txt").read_text().strip() == "3"
    assert (root / "classnames.txt").read_text().splitlines() == ["cat", "dog", "bird"]
    shards = [str(root / "test" / f"{i}.tar") for i in range(3)]
    labels = [int(s["cls"]) for s in webdataset.WebDataset(shards, shardshuffle=False)]
    assert labels == [s.label for s in dataset.samples] == [0, 1, 2, 0, 1]


def test_coco_instances_agree_with_pycocotools(tmp_path):
    path, instances, _ = build_coco_instances(tmp_path)
    oracle = COCO(str(path))
    assert sorted(oracle.getImgIds()) == [1, 2, 5]
    for image in instances.images:
        annotations = oracle.loadAnns(oracle.getAnnIds(imgIds=[image.image_id]))
        assert [a["bbox"] for a in annotations] == [list(b.bbox) for b in image.boxes]
        assert [bool(a["iscrowd"]) for a in annotations] == [b.iscrowd for b in image.boxes]
    assert {c["name"] for c in oracle.loadCats(oracle.getCatIds())} == {c.name for c in instances.categories}


def test_zero_shot_split_is_bansal_48_17(tmp_path):
    path, instances, read = build_coco_instances(tmp_path)
    base, novel = coco_instances.zero_shot_split(read(path), path)
    assert (len(base), len(novel)) == (48, 17)
    assert not set(base) & set(novel)
    ids = coco_instances.COCO_CATEGORY_IDS
    assert {ids["airplane"], ids["cat"], ids["scissors"]} <= set(novel) and ids["person"] in base
    assert (ids["airplane"], ids["tv"], ids["toothbrush"]) == (5, 72, 90)  # COCO 2017 ids
    edit_json(path, lambda d: d["categories"].pop())
    with pytest.raises(InputError, match="lack the zero-shot split classes \\['toothbrush'\\]"):
        coco_instances.zero_shot_split(read(path), path)


def test_flickr30k_returns_only_the_requested_split(tmp_path):
    path, test, _ = build_flickr30k(tmp_path)
    train = flickr30k.read_flickr30k(path, split="train")
    assert [p.image.name for p in train] == ["0.jpg", "1.jpg", "2.jpg"]
    assert [p.image.name for p in test] == ["100.jpg", "101.jpg", "102.jpg"]
    assert json.loads(path.read_text())["images"][3]["sentences"][0]["tokens"] == ["test", "0", "0"]


def test_hierarcaps_reads_the_upstream_csv_excerpt(tmp_path):
    """First rows of TAU-VAILab/hierarcaps data/hierarcaps_test.csv, quoted captions with commas included."""
    path = tmp_path / "data" / "hierarcaps_test.csv"
    path.parent.mkdir()
    path.write_text(
        "id,captions,image_url\n"
        '0,"table => table with plates => table with three plates, with man and woman holding utensil => A table with three '
        'plates with food and a man and a woman both holding utensil near plates.",'
        "http://images.cocodataset.org/val2014/COCO_val2014_000000301718.jpg\n"
        "1,bird => blue bird => blue bird sitting on top of branch => A blue bird sitting on the top of a branch with autumn "
        "leaves,http://images.cocodataset.org/val2014/COCO_val2014_000000100489.jpg\n"
    )
    items = hierarcaps.read_hierarcaps_test(path, check_images=False)
    assert items[0].captions[2] == "table with three plates, with man and woman holding utensil"
    assert items[1].captions[:2] == ("bird", "blue bird")
    assert items[1].image == tmp_path / "assets" / "test_imgs" / "COCO_val2014_000000100489.jpg"


def test_hyperlex_reads_the_upstream_example_lines(tmp_path):
    path = tmp_path / "hyperlex-all.txt"
    path.write_text(
        "WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD SCORES..\n"
        "mascara lipstick N cohyp 0.71 1.18 1.33 0 1 2 0 1 5 1 0 0 0 0 0 0 0\n"
        "highway road N hyp-1 5.80 9.67 0.40 5 6 6 6 6 6 6 6 6 5\n"
    )
    first, second = hyperlex.read_hyperlex(path)
    assert (first.relation, first.score, len(first.ratings)) == ("cohyp", 0.71, 14)
    assert (second.word1, second.word2, second.score_0_10, second.ratings[-1]) == ("highway", "road", 9.67, 5)


def test_grit_rejects_inconsistent_spans(tmp_path):
    path, _, read = build_grit(tmp_path)
    cases = {
        "start < end": [5, 5, 0.1, 0.1, 0.2, 0.2, 0.9],
        "len\\(caption\\) = 30": [0, 31, 0.1, 0.1, 0.2, 0.2, 0.9],
        "must lie in \\[0, 1\\]": [0, 5, 0.1, 0.1, 1.2, 0.2, 0.9],
        "out of order": [0, 5, 0.5, 0.1, 0.2, 0.2, 0.9],
        "7 numbers": [0, 5, 0.1, 0.1, 0.2, 0.2],
        "whole character offsets": [0, 4.5, 0.1, 0.1, 0.2, 0.2, 0.9],
    }
    for problem, span in cases.items():
        build_grit(tmp_path)
        edit_shard_json(path, "0002", lambda meta: meta["noun_chunks"].__setitem__(1, span))
        with pytest.raises(InputError, match=f"00000.tar: record key 0002: noun_chunks\\[1\\].*{problem}"):
            read(path)


def test_clip_benchmark_rejects_bad_labels_templates_and_shard_counts(tmp_path):
    root, _, read = build_clip_benchmark_wds(tmp_path)
    edit_shard(root / "test" / "1.tar", "s0000003", assign("cls", b"3"))
    with pytest.raises(InputError, match="1.tar: record key s0000003: label 3 outside \\[0, 3\\)"):
        read(root)
    build_clip_benchmark_wds(tmp_path)
    (root / "zeroshot_classification_templates.txt").write_text("a photo of a {c}.\na photo of a {}.\n")
    with pytest.raises(InputError, match="templates.txt: record template 2: .* lacks the placeholder \\{c\\}"):
        read(root)
    build_clip_benchmark_wds(tmp_path)
    (root / "test" / "nshards.txt").write_text("4\n")
    with pytest.raises(InputError, match="nshards.txt: announces 4 shards but .*3.tar is missing"):
        read(root)
    (root / "test" / "nshards.txt").write_text("2\n")
    with pytest.raises(InputError, match=r"nshards.txt: announces 2 shards but the folder also holds \['2.tar'\]"):
        read(root)


def test_wordnet_isa_rejects_a_cycle(tmp_path):
    path, edges, read = build_wordnet_isa(tmp_path)
    path.write_text(path.read_text() + "n02084071 n00001740\n")
    with pytest.raises(InputError, match="imagenet_isa.txt: record line \\d: edge .* lies on or below a cycle"):
        read(path)


def test_breeds_split_rejects_overlapping_domains_and_unknown_classes(tmp_path):
    path, _, read = build_breeds_split(tmp_path)
    edit_json(path, lambda d: d["subclass_split"][1].__setitem__(1, [1]))
    with pytest.raises(InputError, match="toy_split.json: record superclass 1: source and target share classes \\[1\\]"):
        read(path)
    build_breeds_split(tmp_path)
    with pytest.raises(InputError, match="record superclass 0: class numbers \\[2\\] are not in the hierarchy"):
        breeds.read_breeds_split(path, breeds.BreedsHierarchy(BREEDS_HIERARCHY.classes[:2], (), {}))


def test_vlchecklist_corpus_yaml_fields(tmp_path):
    path, _, read = build_vlchecklist_corpus(tmp_path)
    assert path.read_text().splitlines() == [
        "ANNO_PATH: data/Object/Size/vg_size/vg_obj_small.json",
        "IMG_ROOT: vg/",
        "TYPE: TUPLE_JSON",
    ]
    path.write_text(path.read_text().replace("TUPLE_JSON", "CSV"))
    with pytest.raises(InputError, match="vg_obj.yaml: TYPE should be 'TUPLE_JSON', got 'CSV'"):
        read(path)


# ----------------------------------------------------------------------------- rejection of bad input
# (format, kind) -> (file to corrupt relative to the fixture path, corruption, regex the message must match)


# A locator maps (fixture path, expected records) to the file to corrupt.


def itself(fixture, expected):
    return fixture


def second_shard(fixture, expected):
    return fixture / "test" / "1.tar"


def class_info(fixture, expected):
    return fixture / breeds.CLASS_INFO


def corpus_annotation(fixture, expected):
    return fixture.parents[5] / "data/Object/Size/vg_size/vg_obj_small.json"


def image_of(index):
    """The locator of the `index`-th expected record's image file."""
    return lambda fixture, expected: expected[index].image


REJECTIONS = {
    ("redcaps", "truncated"): (itself, truncate, "00000.tar: truncated .*key 000"),
    ("redcaps", "missing field"): (itself, lambda p: edit_shard_json(p, "0001", delete("subreddit")), "00000.tar: record key 0001: missing field 'subreddit'"),
    ("redcaps", "wrong type"): (itself, lambda p: edit_shard_json(p, "0001", assign("caption", 5)), "record key 0001: field 'caption' should be a string, got an integer"),
    ("redcaps", "missing image"): (itself, lambda p: edit_shard(p, "0001", delete("jpg")), "00000.tar: record key 0001: missing image"),
    ("grit", "truncated"): (itself, lambda p: truncate(p, 0.3), "00000.tar: truncated"),
    ("grit", "missing field"): (itself, lambda p: edit_shard_json(p, "0000", delete("ref_exps")), "record key 0000: missing field 'ref_exps'"),
    ("grit", "wrong type"): (itself, lambda p: edit_shard_json(p, "0001", assign("noun_chunks", "dog")), "record key 0001: field 'noun_chunks' should be a list, got a string"),
    ("grit", "missing image"): (itself, lambda p: edit_shard(p, "0002", delete("jpg")), "record key 0002: missing image"),
    ("cc3m", "truncated"): (itself, lambda p: truncate(p, 0.7), "00000.tar: truncated"),
    ("grounded", "truncated"): (itself, truncate, "grounded-000000.tar: truncated"),
    ("grounded", "missing field"): (itself, lambda p: edit_shard(p, "s001", delete("child.txt")), "sample 's001': missing child.txt"),
    ("grounded", "wrong type"): (itself, lambda p: edit_shard(p, "s001", assign("numparents.txt", b"one")), "sample 's001': numparents.txt is not an integer"),
    ("grounded", "missing image"): (itself, lambda p: edit_shard(p, "s002", delete("child.jpg")), "sample 's002': missing child.jpg"),
    ("imagefolder", "truncated"): (lambda f, e: e[0][0], truncate, "0000/00000.png: image does not decode"),
    ("imagefolder", "missing field"): (lambda f, e: f.parent / "classnames.txt", lambda p: p.write_text("dog\n"), "classnames.txt: 1 class names for 2 class folders"),
    ("imagefolder", "wrong type"): (lambda f, e: f / "notes.txt", lambda p: p.write_text("x"), "holds files where class folders belong: \\['notes.txt'\\]"),
    ("imagefolder", "missing image"): (lambda f, e: f / "0001", lambda p: [x.unlink() for x in p.iterdir()], "0001: class folder holds no images"),
    ("cc3m", "missing field"): (itself, lambda p: edit_shard(p, "000000001", delete("txt")), "record key 000000001: missing member '.txt'"),
    ("cc3m", "wrong type"): (itself, lambda p: edit_shard(p, "000000001", assign("txt", b"\xff\xfe")), "record key 000000001: member '.txt' is not UTF-8"),
    ("cc3m", "missing image"): (itself, lambda p: edit_shard(p, "000000002", delete("jpg")), "record key 000000002: missing image"),
    ("clip_benchmark_wds", "truncated"): (second_shard, truncate, "1.tar: truncated"),
    ("clip_benchmark_wds", "missing field"): (second_shard, lambda p: edit_shard(p, "s0000002", delete("cls")), "1.tar: record key s0000002: missing member '.cls'"),
    ("clip_benchmark_wds", "wrong type"): (second_shard, lambda p: edit_shard(p, "s0000003", assign("cls", b"dog")), "record key s0000003: '.cls' should hold an integer label, got 'dog'"),
    ("clip_benchmark_wds", "missing image"): (second_shard, lambda p: edit_shard(p, "s0000003", delete("jpg")), "1.tar: record key s0000003: missing image"),
    ("coco_captions", "truncated"): (itself, truncate, "captions_val2017.json: malformed or truncated JSON at line 1"),
    ("coco_captions", "missing field"): (itself, lambda p: edit_json(p, lambda d: d["annotations"][7].pop("caption")), "record annotations\\[7\\]: missing field 'caption'"),
    ("coco_captions", "wrong type"): (itself, lambda p: edit_json(p, lambda d: d["images"][1].__setitem__("id", "2")), "record images\\[1\\]: field 'id' should be an integer, got a string"),
    ("coco_captions", "missing image"): (image_of(1), Path.unlink, "captions_val2017.json: record images\\[1\\] \\(id 2\\): image file not found: .*000000000001.jpg"),
    ("flickr30k", "truncated"): (itself, lambda p: truncate(p, 0.9), "dataset_flickr30k.json: malformed or truncated JSON"),
    ("flickr30k", "missing field"): (itself, lambda p: edit_json(p, lambda d: d["images"][4].pop("filename")), "record images\\[4\\]: missing field 'filename'"),
    ("flickr30k", "wrong type"): (itself, lambda p: edit_json(p, lambda d: d["images"][4]["sentences"][2].__setitem__("raw", None)), "record images\\[4\\].sentences\\[2\\]: field 'raw' should be a string, got null"),
    ("flickr30k", "missing image"): (image_of(2), Path.unlink, "dataset_flickr30k.json: record images\\[5\\]: image file not found: .*102.jpg"),
    ("coco_instances", "truncated"): (itself, truncate, "instances_val2017.json: malformed or truncated JSON"),
    ("coco_instances", "missing field"): (itself, lambda p: edit_json(p, lambda d: d["annotations"][3].pop("bbox")), "record annotations\\[3\\]: missing field 'bbox'"),
    ("coco_instances", "wrong type"): (itself, lambda p: edit_json(p, lambda d: d["annotations"][2].__setitem__("category_id", "18")), "record annotations\\[2\\]: field 'category_id' should be an integer, got a string"),
    ("coco_instances", "missing image"): (lambda fixture, expected: expected.images[2].image, Path.unlink, "instances_val2017.json: record images\\[2\\]: image file not found: .*000000000005.jpg"),
    ("vlchecklist", "truncated"): (itself, truncate, "vg_obj_small.json: malformed or truncated JSON"),
    ("vlchecklist", "missing field"): (itself, lambda p: edit_json(p, lambda d: d[1][1].pop("NEG")), "vg_obj_small.json: record 1: missing field 'NEG'"),
    ("vlchecklist", "wrong type"): (itself, lambda p: edit_json(p, lambda d: d[2][1].__setitem__("POS", "drain")), "record 2: field 'POS' should be a list, got a string"),
    ("vlchecklist", "missing image"): (image_of(1), Path.unlink, "vg_obj_small.json: record 1: image file not found: .*VG_100K/1.jpg"),
    ("vlchecklist_corpus", "truncated"): (corpus_annotation, truncate, "vg_obj_small.json: malformed or truncated JSON"),
    ("vlchecklist_corpus", "missing field"): (itself, lambda p: p.write_text("IMG_ROOT: vg/\nTYPE: TUPLE_JSON\n"), "vg_obj.yaml: missing field 'ANNO_PATH'"),
    ("vlchecklist_corpus", "wrong type"): (itself, lambda p: p.write_text("ANNO_PATH: [a, b]\nIMG_ROOT: vg/\nTYPE: TUPLE_JSON\n"), "vg_obj.yaml: field 'ANNO_PATH' should be a string, got a list"),
    ("vlchecklist_corpus", "missing image"): (image_of(0), Path.unlink, "vg_obj_small.json: record 0: image file not found"),
    ("vg_attribution", "truncated"): (itself, truncate, "visual_genome_attribution.json: malformed or truncated JSON"),
    ("vg_attribution", "missing field"): (itself, lambda p: edit_json(p, lambda d: d[1].pop("false_caption")), "visual_genome_attribution.json: record 1: missing field 'false_caption'"),
    ("vg_attribution", "wrong type"): (itself, lambda p: edit_json(p, lambda d: d[2].__setitem__("bbox_w", "10")), "record 2: field 'bbox_w' should be a number, got a string"),
    ("vg_attribution", "missing image"): (image_of(0), Path.unlink, "visual_genome_attribution.json: record 0: image file not found: .*images/0.jpg"),
    ("hierarcaps_test", "truncated"): (itself, lambda p: truncate(p, 0.8), "hierarcaps_test.csv: record line 4: malformed CSV \\(unexpected end of data\\); truncated file\\?"),
    ("hierarcaps_test", "missing field"): (itself, lambda p: p.write_text(p.read_text().replace("id,captions,image_url", "id,captions,url")), "hierarcaps_test.csv: record line 1: .* lacks column\\(s\\) \\['image_url'\\]"),
    ("hierarcaps_test", "wrong type"): (itself, lambda p: p.write_text(p.read_text().replace("\n1,", "\none,")), "hierarcaps_test.csv: record line 3: 'id' should be an integer, got 'one'"),
    ("hierarcaps_test", "missing image"): (image_of(1), Path.unlink, "hierarcaps_test.csv: record line 3: image file not found: .*COCO_val2014_000000100489.jpg"),
    ("hierarcaps_train", "truncated"): (itself, truncate, "hierarcaps_train.csv.gz: truncated or corrupt gzip stream"),
    ("hierarcaps_train", "missing field"): (itself, lambda p: p.write_bytes(gzip.compress(b"positive\na => b => c => d\n")), "hierarcaps_train.csv.gz: record line 1: .* lacks column\\(s\\) \\['negative'\\]"),
    ("hierarcaps_train", "wrong type"): (itself, lambda p: p.write_bytes(gzip.compress(b"positive,negative\na => b => c => d,a => b\n")), "record line 2: 'negative' should be 4 non-empty levels .* got 2"),
    ("wordnet_isa", "truncated"): (itself, lambda p: truncate(p, 0.85), "imagenet_isa.txt: record line 3: 'n\\d*' is not a wnid"),
    ("wordnet_isa", "missing field"): (itself, lambda p: p.write_text("n00001740 n00021939\nn00021939\n"), "imagenet_isa.txt: record line 2: should be '<parent wnid> <child wnid>', got 1 fields"),
    ("wordnet_isa", "wrong type"): (itself, lambda p: p.write_text("n00001740 dog\n"), "imagenet_isa.txt: record line 1: 'dog' is not a wnid"),
    ("hyperlex", "truncated"): (itself, lambda p: truncate(p, 0.85), "hyperlex-all.txt: record line 4: has \\d fields, expected at least 7; truncated line\\?"),
    ("hyperlex", "missing field"): (itself, lambda p: p.write_text(p.read_text().replace(" 9.67", "")), "hyperlex-all.txt: record line 2: AVG_SCORE_0_10 = 0.4 is not AVG_SCORE = 5.8 rescaled to 0-10 \\(9.67\\); missing column\\?"),
    ("hyperlex", "wrong type"): (itself, lambda p: p.write_text(p.read_text().replace("0.71", "high")), "hyperlex-all.txt: record line 3: AVG_SCORE should be a number, got 'high'"),
    ("breeds", "truncated"): (class_info, truncate, "dataset_class_info.json: malformed or truncated JSON"),
    ("breeds", "missing field"): (class_info, lambda p: edit_json(p, lambda d: d[2].pop()), "dataset_class_info.json: record 2: should be \\[class number, wnid, name\\], got 2 elements"),
    ("breeds", "wrong type"): (class_info, lambda p: edit_json(p, lambda d: d[1].__setitem__(0, "1")), "dataset_class_info.json: record 1: class number should be an integer, got a string"),
    ("yfcc", "truncated"): (lambda f, e: f / yfcc.METADATA, lambda p: truncate(p, 0.7), "yfcc100m_dataset: record line 3: has 3 tab-separated fields, expected 25"),
    ("yfcc", "missing field"): (lambda f, e: f / yfcc.SUBSET, lambda p: p.write_text(p.read_text().replace("\t0000", "\n0000", 1)), "yfcc100m_subset_data.tsv: record line 1: has 2 tab-separated fields, expected 3"),
    ("yfcc", "wrong type"): (lambda f, e: f / yfcc.SUBSET, lambda p: p.write_text("one" + p.read_text()[1:]), "yfcc100m_subset_data.tsv: record line 1: line number 'one' and photo id '5000' must be decimal integers"),
    ("yfcc", "missing image"): (lambda f, e: f / yfcc.IMAGES / "000" / "000" / f"{1:032x}.jpg", Path.unlink, "yfcc100m_dataset: record line 2: photo 5001: image file not found"),
    ("breeds_split", "truncated"): (itself, truncate, "toy_split.json: malformed or truncated JSON"),
    ("breeds_split", "missing field"): (itself, lambda p: edit_json(p, delete("label_map")), "toy_split.json: missing field 'label_map'"),
    ("breeds_split", "wrong type"): (itself, lambda p: edit_json(p, lambda d: d["superclasses"].__setitem__(0, 5)), "toy_split.json: superclasses\\[0\\] should be a string, got an integer"),
}  # fmt: skip


def test_every_format_is_tested_for_every_kind_of_bad_input():
    kinds = ("truncated", "missing field", "wrong type", "missing image")
    without_images = {"hierarcaps_train", "wordnet_isa", "hyperlex", "breeds", "breeds_split"}
    wanted = {(fmt, kind) for fmt in BUILDERS for kind in kinds if kind != "missing image" or fmt not in without_images}
    assert set(REJECTIONS) == wanted


@pytest.mark.parametrize("fmt, kind", sorted(REJECTIONS))
def test_rejects_bad_input(tmp_path, fmt, kind):
    fixture, expected, read = BUILDERS[fmt](tmp_path)
    locate, corrupt, message = REJECTIONS[(fmt, kind)]
    corrupt(locate(fixture, expected))
    with pytest.raises(InputError, match=message):
        read(fixture)
    with pytest.raises(InputError, match=message):
        data_check.check(fmt, fixture, **check_options(fmt, fixture))


def test_missing_images_pass_when_not_checked(tmp_path):
    path, items, _ = build_vg_attribution(tmp_path)
    items[0].image.unlink()
    assert vg_attribution.read_vg_attribution(path, check_images=False) == items
    assert data_check.check("vg_attribution", path, check_images=False)[0] == 3


def test_cli_prints_count_and_first_record_and_fails_cleanly(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="hypvl")
    data_check.add_commands(parser.add_subparsers(dest="command"))
    path, pairs, _ = build_hyperlex(tmp_path)
    args = parser.parse_args(["data", "check", "hyperlex", str(path)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 records\nfirst record:\n")
    assert json.loads(out.split("first record:\n", 1)[1])["word1"] == "highway"
    path.write_text(path.read_text().replace("0.71", "high"))
    with pytest.raises(InputError, match="AVG_SCORE should be a number"):
        args.func(args)
    assert capsys.readouterr().out == ""  # the error is raised (one line from `hypvl`), no records printed


def test_writers_are_deterministic(tmp_path):
    first, _, _ = build_grit(tmp_path / "a")
    second, _, _ = build_grit(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as archive:
        assert {info.mtime for info in archive.getmembers()} == {0}


@pytest.mark.parametrize("fmt, member", [("redcaps", "jpg"), ("grit", "jpg"), ("cc3m", "jpg"),
                                          ("grounded", "child.jpg"), ("grounded", "parent000.jpg")])
def test_check_decodes_shard_images(tmp_path, fmt, member):
    """A corrupt JPEG in a shard passes the readers (bytes are not decoded there) but not `data check`."""
    path, expected, _ = BUILDERS[fmt](tmp_path)
    shard = path if path.suffix == ".tar" else sorted(path.glob("*.tar"))[0]
    key = next(key for key, _, members in iter_tar_samples(shard) if member in members)
    edit_shard(shard, key, lambda members: members.__setitem__(member, members[member][:40]))
    part = "box 0" if member.startswith("parent") else "image"
    with pytest.raises(InputError, match=re.escape(f"{shard}: key {key} ({part}): image does not decode")):
        data_check.check(fmt, path)
    assert data_check.check(fmt, path, check_images=False)[0] == len(records_of(fmt, expected))


@pytest.mark.parametrize("fmt, escape", [
    ("coco_captions", lambda p, name: edit_json(p, lambda d: d["images"][0].__setitem__("file_name", name))),
    ("coco_instances", lambda p, name: edit_json(p, lambda d: d["images"][0].__setitem__("file_name", name))),
    ("vg_attribution", lambda p, name: edit_json(p, lambda d: d[0].__setitem__("image_path", name))),
])
@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "a/../../b.jpg"])
def test_image_paths_escaping_their_root_are_refused(tmp_path, fmt, escape, name):
    fixture, _, read = BUILDERS[fmt](tmp_path)
    escape(fixture, name)
    for check_images in (True, False):
        with pytest.raises(InputError, match=re.escape(f"image path {name!r} points outside the image root")):
            data_check.check(fmt, fixture, check_images, **check_options(fmt, fixture))
