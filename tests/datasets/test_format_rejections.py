"""Rejection of bad input by every format's reader and `hypvl data check`: each test corrupts a fixture (truncation,
a missing field, a wrong type, a missing image) and requires an InputError whose message names the file, the
record and the problem."""

import argparse
import gzip
import json
import re
import tarfile
from pathlib import Path

import pytest

from helpers.fixture_edits import assign, delete, edit_json, edit_shard, edit_shard_json, truncate
from helpers.format_fixtures import (
    BUILDERS,
    build_grit,
    build_hyperlex,
    build_vg_attribution,
    check_options,
    records_of,
)
from hypvl.data import check as data_check
from hypvl.data.formats import breeds, vg_attribution, yfcc
from hypvl.data.formats.shards import iter_tar_samples
from hypvl.errors import InputError


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
