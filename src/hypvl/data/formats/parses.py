"""Dependency parses stored with each caption of a grounded shard (`<key>.child.parse.json`), for the
syntax-preserving hyperbolic VSE paper: the record's fields and their checks (head = parent, token = child).

A record with n tokens holds tokens (n strings), idx (n character offsets into the caption), heads (n head
token indices; the root points at itself, spaCy's convention), deps (n dependency labels) and pos (n
universal POS tags). `hypvl.grounding.parses` makes them from spaCy.
"""

from hypvl.errors import InputError

PARSE_FIELDS = ("tokens", "idx", "heads", "deps", "pos")


def parent_child_pairs(parse):
    """(parent, child) token index pairs of every dependency edge, roots excluded: the set S(T)
    over which the syntax loss is taken."""
    return [(head, child) for child, head in enumerate(parse["heads"]) if head != child]


def validate_parse(parse, where):
    """Raise InputError naming `where` (file and record) if `parse` is not a well-formed record."""
    missing = [f for f in PARSE_FIELDS if f not in parse]
    if missing:
        raise InputError(f"{where}: parse lacks fields {missing}")
    n = len(parse["tokens"])
    for field in PARSE_FIELDS:
        if not isinstance(parse[field], list) or len(parse[field]) != n:
            raise InputError(f"{where}: parse field {field!r} is not a list of {n} entries")
    bad = [h for h in parse["heads"] if not isinstance(h, int) or not 0 <= h < n]
    if bad:
        raise InputError(f"{where}: parse heads {bad} are not token indices in [0, {n})")
    roots = [i for i, h in enumerate(parse["heads"]) if i == h]
    if n and not roots:
        raise InputError(f"{where}: parse has no root (no token is its own head)")
