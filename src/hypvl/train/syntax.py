"""Syntax targets of a training caption for syntax-preserving MERU: which tokens form which word, and the
dependency edges between words, from the caption's parse in the grounded shard.

Choices where the paper is silent (recorded in replication/syntax_vse.yaml): a word is represented by all
of its BPE tokens (their mean, in the model; a token two words share belongs to the first); punctuation
(POS `PUNCT`) is left out, and so is every word with no token inside the context (truncated captions)
together with its edges; the root has no parent.
"""

from dataclasses import dataclass

import torch

from hypvl.data.formats.parses import parent_child_pairs

SKIPPED_POS = ("PUNCT",)


@dataclass(frozen=True)
class SyntaxTargets:
    """One caption's word of every token position (-1: none) and its (parent, child) word pairs, words
    numbered 0..words-1 in caption order."""

    word_of_token: torch.Tensor
    edges: torch.Tensor
    words: int


def syntax_targets(parse: dict, positions: list[list[int]], context_length: int) -> SyntaxTargets:
    """Targets from a parse record and, per parse token, its token positions (`Tokenizer.word_positions`)."""
    owner: dict[int, int] = {}  # token position -> parse token; a BPE token two words share goes to the first
    for token, pos in enumerate(parse["pos"]):
        if pos not in SKIPPED_POS:
            for position in positions[token]:
                owner.setdefault(position, token)
    number = {token: word for word, token in enumerate(sorted(set(owner.values())))}
    word_of_token = torch.full((context_length,), -1, dtype=torch.long)
    for position, token in owner.items():
        word_of_token[position] = number[token]
    edges = [(number[p], number[c]) for p, c in parent_child_pairs(parse) if p in number and c in number]
    return SyntaxTargets(word_of_token, torch.tensor(edges, dtype=torch.long).reshape(-1, 2), len(number))


def collate_syntax(targets: list[SyntaxTargets]) -> dict[str, torch.Tensor]:
    """A batch's `word_of_token` (B, L) and `syntax_edges` (E, 2), words numbered across the batch."""
    offsets = torch.tensor([0, *(t.words for t in targets)]).cumsum(0)[:-1].tolist()
    word_of_token = torch.stack([torch.where(t.word_of_token >= 0, t.word_of_token + o, -1)
                                 for t, o in zip(targets, offsets)])
    edges = torch.cat([t.edges + o for t, o in zip(targets, offsets)])
    return {"word_of_token": word_of_token, "syntax_edges": edges}
