"""The smoke world's concepts: a real is-a tree, and captions whose spans name each object at some level."""

import numpy as np

from hypvl.worlds.smoke import captions, world
from hypvl.worlds.smoke.corpora import corpus_picture


def test_hierarchy_is_a_tree_with_three_levels_above_each_leaf():
    edges = world.isa_edges()
    parents = dict(edges)
    assert len(parents) == len(edges), "a node with two parents"
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
        picture = corpus_picture(rng, "grit", 64)
        text, spans = captions.caption(picture, rng)
        assert len(spans) == len(picture.objects)
        for obj, (start, end) in zip(picture.objects, spans):
            noun = text[start:end].split()[-1]
            assert noun in (obj.concept.name, obj.concept.basic, obj.concept.superordinate)
