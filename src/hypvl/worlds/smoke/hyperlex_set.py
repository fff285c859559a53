"""The smoke world's HyperLex: graded "is X a type of Y?" pairs of its hierarchy, rated by simulated raters."""

import itertools
from pathlib import Path

import numpy as np

from hypvl.data.formats.hyperlex import HyperLexPair, write_hyperlex

from .settings import WorldSettings, rng_for
from .world import isa_edges, leaf_concepts

# mean 0-6 rating of "to what degree is X a type of Y?" per relation
HYPERLEX_MEANS = {"hyp-1": 5.6, "hyp-2": 5.2, "hyp-3": 4.8, "r-hyp-1": 1.4, "cohyp": 0.9, "no-rel": 0.2}


def hyperlex_pairs() -> list[tuple[str, str, str]]:
    """(word1, word2, relation) pairs of the world hierarchy: hypernyms 1-3 levels up, reversed
    direct edges, co-hyponyms (siblings) and unrelated leaves of different superordinates."""
    parents = dict(isa_edges())
    pairs = []
    for child in parents:
        node, distance = child, 0
        while node in parents:
            node, distance = parents[node], distance + 1
            pairs.append((child, node, f"hyp-{distance}"))
    pairs += [(parent, child, "r-hyp-1") for child, parent in isa_edges()]
    siblings: dict[str, list[str]] = {}
    for child, parent in isa_edges():
        siblings.setdefault(parent, []).append(child)
    pairs += [(a, b, "cohyp") for group in siblings.values() for a, b in itertools.combinations(group, 2)]
    leaves = leaf_concepts()
    pairs += [(a.name, b.name, "no-rel") for a, b in zip(leaves, leaves[7:] + leaves[:7])
              if a.superordinate != b.superordinate]
    return pairs


def write_hyperlex_set(settings: WorldSettings, path: Path, raters: int = 10) -> dict:
    """HyperLex-like file: each pair rated 0-6 by `raters` simulated raters around its relation's mean."""
    rows = []
    for index, (word1, word2, relation) in enumerate(hyperlex_pairs()):
        rng = rng_for(settings.seed, "hyperlex", index)
        ratings = np.clip(np.rint(rng.normal(HYPERLEX_MEANS[relation], 0.8, raters)), 0, 6).astype(int)
        score = round(float(ratings.mean()), 2)
        rows.append(HyperLexPair(word1, word2, "N", relation, score, round(score * 10 / 6, 2),
                                 round(float(ratings.std()), 2), tuple(int(r) for r in ratings)))
    write_hyperlex(path, rows)
    return {"pairs": len(rows)}
