"""Wildcard constraints: a regex matching exactly a set of ids, written as a trie of their shared prefixes (Snakemake
compiles a rule's constraint into every output pattern of the rule: the train rule's 93 ids in 23 outputs, as one
alternation, took a quarter of planning)."""

import re

ANY_ID = "[a-z0-9_]+"  # an experiment id: the Snakefile's constraint, where a rule names none


def _trie_regex(node: dict) -> str:
    """The regex of a character trie (`""` marks the end of a name): shared prefixes written once."""
    branches = []
    for char in sorted(node):
        branches.append(re.escape(char) + _trie_regex(node[char]) if char else "")
    ends = "" in branches
    branches = [branch for branch in branches if branch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 and not ends else f"(?:{'|'.join(branches)})"
    return body + ("?" if ends else "")


def pattern(ids) -> str:
    """A regex matching exactly `ids` (a wildcard constraint), as a trie of their common prefixes; nothing when there
    are none."""
    trie: dict = {}
    for name in ids:
        node = trie
        for char in name:
            node = node.setdefault(char, {})
        node[""] = {}
    return _trie_regex(trie) if trie else "(?!)"


def excluding(constraint: str, ids) -> str:
    """`constraint` minus exactly `ids`: a lookahead refusing each of them as a whole id (not as a prefix of a longer
    one), so that the constraint holds alone and inside a path."""
    ids = list(ids)
    return f"(?!{pattern(ids)}(?![a-z0-9_])){constraint}" if ids else constraint
