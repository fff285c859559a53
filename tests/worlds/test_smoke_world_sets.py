"""The complete smoke world: every set reads back through its real reader with the expected counts,
the hierarchies hold, and the same seed writes the same bytes."""

import hashlib
import itertools
import json
from pathlib import Path

import networkx as nx
import pytest
from pycocotools.coco import COCO

from helpers import REPO
from helpers.smoke_world import TINY
from hypvl.config import load_config
from hypvl.data.catalog import load_dataset_info
from hypvl.data.formats.breeds import read_breeds_hierarchy, read_breeds_split
from hypvl.data.formats.cc3m import read_cc3m
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.coco_captions import read_coco_captions
from hypvl.data.formats.coco_instances import (
    BANSAL_BASE_CATEGORIES,
    BANSAL_NOVEL_CATEGORIES,
    COCO_CATEGORY_IDS,
    read_coco_instances,
    zero_shot_split,
)
from hypvl.data.formats.flickr30k import read_flickr30k
from hypvl.data.formats.grit import read_grit
from hypvl.data.formats.hierarcaps import read_hierarcaps_test, read_hierarcaps_train, train_images
from hypvl.data.formats.hyperlex import read_hyperlex
from hypvl.data.formats.images import decode_image
from hypvl.data.formats.oracle_regions import ORACLE_REGIONS
from hypvl.data.formats.redcaps import read_redcaps
from hypvl.data.formats.vg_attribution import read_vg_attribution
from hypvl.data.formats.vlchecklist import read_vlchecklist_corpus
from hypvl.data.formats.wordnet_isa import read_wordnet_isa
from hypvl.data.formats.yfcc import read_yfcc
from hypvl.worlds.smoke import world
from hypvl.worlds.smoke.build import build_world
from hypvl.worlds.smoke.captions import SUBREDDITS
from hypvl.worlds.smoke.classification_sets import ALL_CLASSIFICATION_SETS, CLASSIFICATION_SETS, MERU_EXTRA_SETS
from hypvl.worlds.smoke.settings import WorldSettings
from hypvl.io import OUTPUTS

CONFIG = load_config()
DATASETS = CONFIG["eval"]["datasets"]
RAW = {corpus: entry["path"] for corpus, entry in CONFIG["grounding"]["raw"].items()}
PARENT = dict(world.isa_edges())


def _build(out: Path) -> dict:
    return build_world(TINY, out, RAW, DATASETS, CONFIG["eval"]["classification_dir"],
                       CONFIG["eval"]["probe_source_dir"])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world")
    _build(out)
    return out


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_writes_identical_bytes(tiny, tmp_path):
    _build(tmp_path)
    assert _digest(tmp_path) == _digest(tiny)


def test_each_part_written_alone_is_the_same_as_in_the_whole_world(tiny, tmp_path, capsys):
    """`hypvl synthesize --only`: the workflow draws each corpus and the evaluation sets in their own job."""
    from hypvl.cli import main

    config = json.dumps({"smoke_world": TINY.as_dict()})
    assert main(["synthesize", "--config-json", config, "--out", str(tmp_path), "--only", "redcaps"]) == 0
    assert not (tmp_path / "manifest.json").exists() and not (tmp_path / RAW["grit"]).exists()
    assert main(["synthesize", "--config-json", config, "--out", str(tmp_path), "--only", "grit", "evaluation"]) == 0
    whole = {path: digest for path, digest in _digest(tiny).items()
             if not path.startswith((RAW["cc3m"], RAW["yfcc15m"]))}
    assert _digest(tmp_path) == whole
    assert main(["synthesize", "--config-json", config, "--out", str(tmp_path), "--only", "yfcc"]) == 1
    assert capsys.readouterr().err.startswith("hypvl synthesize: --only ['yfcc']: parts are the corpora")


def test_raw_corpora_read_back_with_world_boxes(tiny):
    grit = read_grit(tiny / RAW["grit"])
    assert len(grit) == TINY.grit_samples and len(list((tiny / RAW["grit"]).glob("*.tar"))) == 3
    nouns = {n for child, parent in world.isa_edges() for n in (child, parent)}
    for sample in grit:
        assert sample.noun_chunks
        for span in sample.noun_chunks:
            assert sample.caption[span.start:span.end].split()[-1] in nouns
            assert 0.65 <= span.score <= 1.0 and span.x2 - span.x1 == pytest.approx(span.y2 - span.y1, abs=1e-9)
        for span in sample.ref_exps:  # the last object's phrase running on to the caption's end
            assert span.end == len(sample.caption) and span.start == sample.noun_chunks[-1].start
    redcaps = read_redcaps(tiny / RAW["redcaps"])
    assert len(redcaps) == TINY.redcaps_samples
    assert {s.subreddit for s in redcaps} <= set(SUBREDDITS.values())
    cc3m = read_cc3m(tiny / RAW["cc3m"])  # HierarCaps' train rows' pictures first, under their last positive level
    hierarcaps = read_hierarcaps_train(tiny / DATASETS["hierarcaps_train"])
    assert len(cc3m) == TINY.hierarcaps_train + TINY.cc3m_samples
    assert [s.caption for s in cc3m[:TINY.hierarcaps_train]] == [pair.positive[-1] for pair in hierarcaps]
    yfcc = read_yfcc(tiny / RAW["yfcc15m"])
    assert len(yfcc) == TINY.yfcc15m_samples and all(s.key.isdigit() for s in yfcc)
    assert [s.title == "" for s in yfcc] == [i % 4 == 3 for i in range(TINY.yfcc15m_samples)]  # caption in markup
    assert all("<" not in s.caption and "http" not in s.caption for s in yfcc)
    for corpus, samples in (("redcaps", redcaps), ("cc3m", cc3m), ("yfcc15m", yfcc)):
        lines = [json.loads(line) for line in (tiny / RAW[corpus] / ORACLE_REGIONS).read_text().splitlines()]
        assert [line["key"] for line in lines] == [s.key for s in samples]
        for line, sample in zip(lines, samples):
            assert all(region["text"] in sample.caption for region in line["regions"])
            assert all(0 <= v <= TINY.image_size for region in line["regions"] for v in region["box"])


@pytest.mark.parametrize("name", sorted(ALL_CLASSIFICATION_SETS))
def test_classification_sets_have_a_test_split_and_probe_sources(tiny, name):
    """The test split in the set's catalog layout, class by class; the linear-probe sources beside it
    (tests/datasets/test_probe_splits.py)."""
    root = tiny / CONFIG["eval"]["classification_dir"] / name
    classes = ALL_CLASSIFICATION_SETS[name].classes
    info = load_dataset_info(name)
    dataset = read_classification_split(root, "test")
    assert dataset.layout == info.layout and dataset.class_names == classes
    files = {"imagefolder": [OUTPUTS, "classnames.txt", "test"],  # OUTPUTS: what a rerun may replace
             "clip_benchmark_wds": [OUTPUTS, "classnames.txt", "test", "zeroshot_classification_templates.txt"]}
    assert sorted(p.name for p in root.iterdir()) == files[info.layout]
    assert dataset.labels == tuple(label for label in range(len(classes)) for _ in range(TINY.per_class))
    assert dataset.load(0).size == (TINY.image_size, TINY.image_size)
    sources = tiny / CONFIG["eval"]["probe_source_dir"] / name
    assert sources.is_dir() == (name != "imagenet")  # MERU's catalog has no ImageNet linear probe
    if name in MERU_EXTRA_SETS:  # the catalog's class names, in its label order
        assert classes == info.class_names


def test_the_sixteen_table1_sets_keep_their_names():
    assert list(CLASSIFICATION_SETS) == [
        "imagenet", "cifar10", "cifar100", "sun397", "caltech101", "stl10", "food101", "cub", "cars", "aircraft",
        "pets", "flowers", "dtd", "eurosat", "resisc45", "country211"]
    assert CLASSIFICATION_SETS["imagenet"].classes == tuple(leaf.name for leaf in world.leaf_concepts())


def test_coco_captions_and_instances(tiny):
    items = read_coco_captions(tiny / DATASETS["coco_captions"])
    assert len(items) == TINY.retrieval_images and all(len(item.captions) == 5 for item in items)
    assert all(item.image.parent == tiny / "eval" / "coco" / "val2017" for item in items)
    instances = read_coco_instances(tiny / DATASETS["coco_instances"])
    base, novel = zero_shot_split(instances, tiny / DATASETS["coco_instances"])
    assert len(base) == 48 and len(novel) == 17 and len(instances.categories) == 65
    used = {b.category_id for image in instances.images for b in image.boxes}
    assert used <= {COCO_CATEGORY_IDS[name] for name in world.COCO_CATEGORY_OF.values()}
    assert used & set(base) and used & set(novel)
    oracle = COCO(str(tiny / DATASETS["coco_instances"]))  # pycocotools reads the same annotations
    assert len(oracle.getAnnIds()) == sum(len(image.boxes) for image in instances.images)
    assert sorted(oracle.getCatIds()) == sorted(COCO_CATEGORY_IDS[n] for n in BANSAL_BASE_CATEGORIES
                                                + BANSAL_NOVEL_CATEGORIES)


def test_world_concepts_play_coco_categories_of_their_own_name():
    for leaf in world.leaf_concepts():
        category = world.coco_category(leaf)
        assert category in (None, leaf.name, leaf.basic)
        assert category is None or category in BANSAL_BASE_CATEGORIES + BANSAL_NOVEL_CATEGORIES


def test_flickr30k_karpathy_splits(tiny):
    test = read_flickr30k(tiny / DATASETS["flickr30k"], "test")
    assert len(test) == TINY.retrieval_images and {len(item.captions) for item in test} == {5}
    assert len(read_flickr30k(tiny / DATASETS["flickr30k"], "train")) == 10


def test_vlchecklist_corpora(tiny):
    root = tiny / DATASETS["vlchecklist"]
    yamls = sorted((root / "corpus" / "v1").rglob("*.yaml"))
    groups = {str(p.relative_to(root / "corpus" / "v1").parent) for p in yamls}
    assert {"Object/Size/small", "Object/Size/medium", "Object/Size/large", "Object/Location/center",
            "Object/Location/mid", "Object/Location/margin", "Attribute/color", "Attribute/size",
            "Attribute/material", "Attribute/state", "Attribute/action", "Relation/spatial",
            "Relation/action"} == groups
    for path in yamls:
        corpus, items = read_vlchecklist_corpus(path)
        assert len(items) == TINY.vlchecklist_per_group
        for item in items:
            pos, neg = item.positives[0].split(), item.negatives[0].split()
            assert len(pos) >= 2 and pos != neg
            if path.parts[-3] == "Object" or path.parts[-3] == "Attribute":
                assert sum(a != b for a, b in zip(pos[1:], neg[1:])) == 1  # one word swapped
            else:  # the relation words change, the objects stay
                assert (pos[1], pos[-1]) == (neg[1], neg[-1])


LOOK_WORDS = {"Attribute/state": {"bright", "faded"}, "Attribute/action": {"resting", "moving"},
              "Relation/action": {"carrying", "ignoring"}}


@pytest.mark.parametrize("group", sorted(LOOK_WORDS))
def test_vlchecklist_state_and_action_captions_swap_only_that_word(tiny, group):
    _, items = read_vlchecklist_corpus(tiny / DATASETS["vlchecklist"] / "corpus" / "v1" / group / "vg.yaml")
    assert len(items) == TINY.vlchecklist_per_group
    for item in items:
        pos, neg = item.positives[0].split(), item.negatives[0].split()
        swapped = [(a, b) for a, b in zip(pos, neg) if a != b]
        assert len(pos) == len(neg) and len(swapped) == 1 and set(swapped[0]) == LOOK_WORDS[group]


def test_vg_attribution_pairs(tiny):
    items = read_vg_attribution(tiny / DATASETS["vg_attribution"])
    pairs = list(itertools.combinations(world.TEXTURES, 2))
    assert len(items) == len(pairs) * TINY.vg_attribution_per_pair
    for pair in pairs:
        assert sum(item.attributes == pair for item in items) == TINY.vg_attribution_per_pair
    for item in items:
        a, b = item.attributes
        assert item.true_caption.replace(a, "#").replace(b, a).replace("#", b) == item.false_caption
        x, y, w, h = item.bbox
        assert x + w <= TINY.image_size and y + h <= TINY.image_size


def _noun(text: str) -> str:
    return text.split()[-1]


def test_hierarcaps_chains_entail_from_general_to_specific(tiny):
    items = read_hierarcaps_test(tiny / DATASETS["hierarcaps_test"])
    assert len(items) == TINY.hierarcaps_test
    for item in items:
        first, second, third, fourth = item.captions
        assert PARENT[_noun(second)] == _noun(first) and PARENT[_noun(third)] == _noun(second)
        assert fourth.startswith(third.split()[0] + " " + third.split()[1])  # same size word
        assert third.split()[-1] in fourth.split()
        assert item.image.is_file()
    pairs = read_hierarcaps_train(tiny / DATASETS["hierarcaps_train"])
    assert len(pairs) == TINY.hierarcaps_train
    for pair in pairs:
        p, n = pair.positive, pair.negative
        assert all(a != b for a, b in zip(p, n))                    # tier i contradicts positive tier i
        assert PARENT[_noun(n[1])] == _noun(p[0])                   # ... and entails positive tier i-1
        assert PARENT[_noun(n[2])] == _noun(p[1]) and n[2].split()[1] == p[2].split()[1]
        assert n[3].startswith(" ".join(p[2].split()[:2])) and _noun(p[2]) in n[3].split()
    assert DATASETS["hierarcaps_train_images"] == RAW["cc3m"]  # in the CC3M corpus, as paper-scale acquisition
    images = train_images(pairs, tiny / DATASETS["hierarcaps_train_images"])  # cross-referenced by tier-4 caption
    assert all(image is not None and decode_image(image, "row").size == (TINY.image_size,) * 2 for image in images)


def test_every_evaluation_set_and_the_cc3m_corpus_lie_where_paper_scale_acquisition_leaves_them():
    """One on-disk layout per dataset: the smoke config's paths are full.yaml's, so the smoke world exercises the
    paper-scale readers (HierarCaps' train images: the CC3M corpus at both scales)."""
    full = load_config([REPO / "workflows" / "config" / "full.yaml"])
    assert DATASETS == full["eval"]["datasets"]
    assert RAW["cc3m"] == full["grounding"]["raw"]["cc3m"]["path"] == DATASETS["hierarcaps_train_images"]


def test_wordnet_isa_and_hyperlex(tiny):
    edges = read_wordnet_isa(tiny / DATASETS["imagenet_isa"])
    graph = nx.DiGraph([(e.parent, e.child) for e in edges])
    names = dict(line.split("\t") for line in (tiny / "eval" / "wordnet" / "words.txt").read_text().splitlines())
    assert nx.is_arborescence(graph) and names[next(n for n, d in graph.in_degree() if d == 0)] == world.ROOT
    leaves = {names[n] for n in graph if graph.out_degree(n) == 0}
    assert leaves == set(CLASSIFICATION_SETS["imagenet"].classes)
    pairs = read_hyperlex(tiny / DATASETS["hyperlex"])
    depth = {names[n]: nx.shortest_path_length(graph, next(iter(nx.topological_sort(graph))), n) for n in graph}
    by_relation: dict[str, list[float]] = {}
    for pair in pairs:
        by_relation.setdefault(pair.relation, []).append(pair.score)
        if pair.relation.startswith("hyp-"):  # word2 is an ancestor this many levels up
            assert depth[pair.word1] - depth[pair.word2] == int(pair.relation[4:])
            assert nx.has_path(graph, *(next(k for k, v in names.items() if v == w)
                                        for w in (pair.word2, pair.word1)))
    mean = {relation: sum(scores) / len(scores) for relation, scores in by_relation.items()}
    assert mean["hyp-1"] > mean["hyp-2"] > mean["hyp-3"] > mean["r-hyp-1"] > mean["no-rel"]


def test_breeds_hierarchy_and_splits(tiny):
    folder = tiny / DATASETS["breeds"]
    hierarchy = read_breeds_hierarchy(folder)
    assert [c.name for c in hierarchy.classes] == list(CLASSIFICATION_SETS["imagenet"].classes)
    graph = nx.DiGraph([(e.parent, e.child) for e in hierarchy.edges])
    for split, count in (("basic7.json", 7), ("superordinate4.json", 4)):
        superclasses = read_breeds_split(folder / split, hierarchy)
        assert len(superclasses) == count
        covered = []
        for superclass in superclasses:
            assert superclass.source and superclass.target
            for number in superclass.source + superclass.target:
                assert nx.has_path(graph, superclass.wnid, hierarchy.classes[number].wnid)
                covered.append(number)
        assert sorted(covered) == list(range(len(hierarchy.classes)))


def test_manifest_records_paths_and_counts(tiny):
    manifest = json.loads((tiny / "manifest.json").read_text())
    assert manifest["settings"] == TINY.as_dict()
    assert {k: manifest["paths"][k] for k in DATASETS if k != "hierarcaps_train_images"} == {
        k: path for k, path in DATASETS.items() if k != "hierarcaps_train_images"}  # those: the CC3M corpus's
    grit = json.loads((tiny / RAW["grit"] / "corpus.json").read_text())
    assert grit["samples"] == TINY.grit_samples and grit["settings"] == TINY.as_dict()
    assert sorted(grit["shards"]) == sorted(str(p.relative_to(tiny)) for p in (tiny / RAW["grit"]).glob("*.tar"))
    assert manifest["classification"]["mnist"] == {"test": 20}
    # mnist's train[:80%] and train[80%:] must each hold every one of 10 classes equally often: 40 and 10 of 50
    # (48 gives 38 and 10, 49 gives 39 and 10)
    assert manifest["probe_sources"]["mnist"] == {"layout": "clip_benchmark_wds", "splits": {"train": 50}}
    assert manifest["paths"]["probe_sources"] == CONFIG["eval"]["probe_source_dir"]
    assert manifest["eval"]["coco"]["images"] == TINY.retrieval_images


def test_another_seed_draws_other_pictures_and_captions():
    from hypvl.worlds.smoke.corpora import corpus_item

    a, b = corpus_item(TINY, "grit", 0), corpus_item(WorldSettings(seed=4), "grit", 0)
    assert a.image != b.image and a.caption != b.caption
    assert corpus_item(TINY, "grit", 0) == a
