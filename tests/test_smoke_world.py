"""The smoke world: deterministic, a real hierarchy, captions whose spans name the objects, real formats."""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from hypvl.data.formats.grounded import iter_grounded
from hypvl.data.formats.images import decode_image
from hypvl.data.formats.imagefolder import read_imagefolder
from hypvl.data.synthetic import captions, world
from hypvl.data.synthetic.build import CLASSIFICATION_SETS, WorldSettings, build_world, corpus_record

TINY = WorldSettings(seed=3, grit_samples=40, redcaps_samples=30, per_class=2, shard_size=16)


@pytest.fixture(scope="module")
def tiny_world(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world")
    build_world(TINY, out)
    return out


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_writes_identical_bytes(tiny_world, tmp_path):
    build_world(TINY, tmp_path)
    assert _digest(tmp_path) == _digest(tiny_world)


def test_other_seed_draws_other_pictures():
    a = corpus_record(TINY, "grit", 0)
    b = corpus_record(WorldSettings(seed=4), "grit", 0)
    assert a.image != b.image


def test_hierarchy_is_a_tree_with_three_levels_above_each_leaf():
    parents = dict(world.isa_edges())
    assert len(parents) == len(world.isa_edges()), "a node with two parents"
    for leaf in world.leaf_concepts():
        chain, node = [], leaf.name
        while node in parents:
            node = parents[node]
            chain.append(node)
        assert tuple(chain) == leaf.ancestors
        assert chain[-1] == world.ROOT


def test_caption_spans_name_each_object_at_some_level():
    rng = np.random.default_rng(0)
    for _ in range(50):
        pic = world_picture(rng)
        text, spans = captions.caption(pic, rng)
        assert len(spans) == len(pic.objects)
        for obj, (start, end) in zip(pic.objects, spans):
            noun = text[start:end].split()[-1]
            assert noun in (obj.concept.name, obj.concept.basic, obj.concept.superordinate)


def world_picture(rng):
    from hypvl.data.synthetic.build import corpus_picture

    return corpus_picture(rng, "grit", 64)


def test_grounded_corpus_boxes_are_square_crops_with_phrases(tiny_world):
    shards = sorted((tiny_world / "train" / "grit").glob("*.tar"))
    assert len(shards) == 3  # 40 samples, 16 per shard
    records = list(iter_grounded(shards))
    assert len(records) == TINY.grit_samples
    assert all(r.boxes for r in records), "GRIT-like samples always keep their boxes"
    for record in records[:10]:
        for crop, phrase in record.boxes:
            assert decode_image(crop, "crop").size == (TINY.image_size, TINY.image_size)
            assert phrase in record.caption


def test_redcaps_corpus_drops_boxes_for_some_samples(tiny_world):
    records = list(iter_grounded(sorted((tiny_world / "train" / "redcaps").glob("*.tar"))))
    with_boxes = sum(bool(r.boxes) for r in records)
    assert 0 < with_boxes < len(records)


@pytest.mark.parametrize("name", sorted(CLASSIFICATION_SETS))
def test_classification_sets_are_image_folders_with_class_names(tiny_world, name):
    dataset = read_imagefolder(tiny_world / "eval" / "classification" / name, "test")
    assert dataset.class_names == list(CLASSIFICATION_SETS[name].classes)
    assert len(dataset.samples) == TINY.per_class * len(dataset.class_names)
