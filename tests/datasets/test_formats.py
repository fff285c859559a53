"""Readers and writers of the real on-disk formats: round trips against the writers and independent parsers
(webdataset, CLIP_benchmark, pycocotools), and each format's own consistency checks. Fixtures: helpers.format_fixtures."""

import json

import pytest
import webdataset
from pycocotools.coco import COCO

from helpers.fixture_edits import assign, edit_json, edit_shard, edit_shard_json
from helpers.format_fixtures import (
    BREEDS_HIERARCHY,
    BUILDERS,
    build_breeds_split,
    build_clip_benchmark_wds,
    build_coco_instances,
    build_flickr30k,
    build_grit,
    build_redcaps,
    build_vlchecklist_corpus,
    build_wordnet_isa,
    check_options,
    records_of,
)
from hypvl.data import check as data_check
from hypvl.data.formats import breeds, coco_instances, flickr30k, hierarcaps, hyperlex
from hypvl.errors import InputError


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
