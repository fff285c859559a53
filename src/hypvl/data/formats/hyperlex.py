"""HyperLex (Vulić et al., Computational Linguistics 2017): graded lexical entailment pairs.

`hyperlex-all.txt` (and the split files in the same layout) is space-separated with the header
`WORD1 WORD2 POS TYPE AVG_SCORE AVG_SCORE_0_10 STD SCORES..`, then one pair per line, e.g.
`highway road N hyp-1 5.80 9.67 0.40 5 6 6 6 6 6 6 6 6 5`: POS is N or V, TYPE the WordNet
relation (hyp-1..hyp-4, r-hyp-1.., cohyp, syn, ant, mero, no-rel, ...), AVG_SCORE the mean rating
on 0-6 ("to what degree is WORD1 a type of WORD2?"), AVG_SCORE_0_10 the same on 0-10, STD its
standard deviation and SCORES the individual 0-6 ratings. AVG_SCORE_0_10 must equal AVG_SCORE * 10/6
(up to the 2-decimal rounding), which catches a dropped column in these variable-length lines.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hypvl.io import atomic_write

from .common import Where, read_text

HEADER = ("WORD1", "WORD2", "POS", "TYPE", "AVG_SCORE", "AVG_SCORE_0_10", "STD")
HEADER_LINE = " ".join(HEADER) + " SCORES.."
POS_TAGS = ("N", "V")
RESCALE_TOLERANCE = 0.02  # both scores are printed to 2 decimals: |round(10m/6) - 10 round(m)/6| <= 0.0134


@dataclass(frozen=True)
class HyperLexPair:
    """One rated pair: 'to what degree is `word1` a type of `word2`?'."""

    word1: str
    word2: str
    pos: str
    relation: str
    score: float
    score_0_10: float
    std: float
    ratings: tuple[int, ...]


def _number(text: str, column: str, low: float, high: float, where: Where) -> float:
    """A float column checked to lie in [low, high]."""
    try:
        value = float(text)
    except ValueError:
        raise where.error(f"{column} should be a number, got '{text}'") from None
    if not low <= value <= high:
        raise where.error(f"{column} = {value} outside [{low}, {high}]")
    return value


def read_hyperlex(path: Path) -> list[HyperLexPair]:
    """Pairs in file order; the first line must be the HyperLex header."""
    path = Path(path)
    lines = read_text(path).splitlines()
    if not lines or tuple(lines[0].split()[: len(HEADER)]) != HEADER:
        raise Where(path, "line 1").error(f"expected the header '{HEADER_LINE}'")
    pairs = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = Where(path, f"line {number}")
        parts = line.split()
        if len(parts) < len(HEADER):
            raise where.error(f"has {len(parts)} fields, expected at least {len(HEADER)}; truncated line?")
        word1, word2, pos, relation = parts[:4]
        if pos not in POS_TAGS:
            raise where.error(f"POS should be one of {POS_TAGS}, got '{pos}'")
        ratings = []
        for text in parts[len(HEADER) :]:
            if not text.isdigit() or int(text) > 6:
                raise where.error(f"individual rating '{text}' is not an integer in [0, 6]")
            ratings.append(int(text))
        score = _number(parts[4], "AVG_SCORE", 0, 6, where)
        score_0_10 = _number(parts[5], "AVG_SCORE_0_10", 0, 10, where)
        if abs(score_0_10 - score * 10 / 6) > RESCALE_TOLERANCE:
            raise where.error(
                f"AVG_SCORE_0_10 = {score_0_10} is not AVG_SCORE = {score} rescaled to 0-10 ({score * 10 / 6:.2f}); "
                "missing column?"
            )
        std = _number(parts[6], "STD", 0, 6, where)
        pairs.append(HyperLexPair(word1, word2, pos, relation, score, score_0_10, std, tuple(ratings)))
    return pairs


def write_hyperlex(path: Path, pairs: Sequence[HyperLexPair]) -> None:
    """Write the header and one line per pair (floats in shortest round-trip form)."""
    lines = [HEADER_LINE]
    for p in pairs:
        numbers = (repr(p.score), repr(p.score_0_10), repr(p.std), *map(str, p.ratings))
        lines.append(" ".join((p.word1, p.word2, p.pos, p.relation, *numbers)))
    with atomic_write(path, mode="w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
