"""Dependency parses of captions with spaCy (`en_core_web_sm`), as the records grounded shards store
(`hypvl.data.formats.parses`)."""

from hypvl.data.formats.parses import PARSE_FIELDS


def parse_record(doc):
    """The parse record (fields `PARSE_FIELDS`) of a spaCy Doc."""
    record = {field: [] for field in PARSE_FIELDS}
    for token in doc:  # one pass: iterating a Doc is the costly part
        record["tokens"].append(token.text)
        record["idx"].append(token.idx)
        record["heads"].append(token.head.i)
        record["deps"].append(token.dep_)
        record["pos"].append(token.pos_)
    return record
