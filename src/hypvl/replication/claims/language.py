"""The claim language: how a claim is written, its schema, and the table cells it may name.

Claims live under the top-level `claims:` key of `replication/<paper>.yaml`:

```yaml
claims:
  hyco_beats_baselines_15_of_16:
    sentence: "Our method outperforms baselines on 15 out of the 16 evaluation datasets."
    where: "Table 1 caption"
    readings:                      # or `check:` (one reading) or `not_checkable:` (a reason)
      grit_all_backbones:
        description: "best among all GRIT rows, ties count"
        check: {count_best: {table: table1, rows: [...], target: [...], ties: win, op: "==", k: 15}}
```

A cell is named `<table>.<row>.<column>`. The predicate vocabulary (`PREDICATES`):
  compare             left <op> right; each side a cell, a number, {mean: [cells]}, {difference: [a, b]}
                      or {row_mean: <table>.<row>, columns: [...]} (default: every value column)
  count_best          columns where the best of `target` rows is the best among `rows`, counted, <op> k
  count_pairs         (pair, column) cells where row a beats row b, counted, <op> k
  in_range            every listed cell lies in [min, max]
  max_abs_difference  max |a - b| over pairs x columns, <op> value
  all_of / any_of     conjunction / disjunction of predicates
`lower_is_better` lists columns where smaller wins; `ties: win` counts a shared best as a win.

`load_claims` validates a spec's claims against `CLAIMS_SCHEMA`, then checks that every table, row
and column a predicate names is one the paper prints. Evaluating them is `claims.evaluator`'s job.
"""

import operator
from dataclasses import dataclass

from hypvl.errors import InputError
from hypvl.spec.document import read_yaml, schema_problems
from hypvl.spec.paper import PaperSpec

OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": None, "!=": None}
PREDICATES = ("compare", "count_best", "count_pairs", "in_range", "max_abs_difference", "all_of", "any_of")

_CELL = {"type": "string", "pattern": r"^[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+$"}
_ROW = {"type": "string", "pattern": r"^[a-z0-9_]+$"}
_ROWS = {"type": "array", "items": _ROW, "minItems": 1, "uniqueItems": True}
_COLUMNS = {"oneOf": [{"const": "all"}, {"type": "array", "items": _ROW, "minItems": 1, "uniqueItems": True}]}
_OP = {"enum": list(OPS)}
_VALUE = {"oneOf": [
    _CELL,
    {"type": "number"},
    {"type": "object", "additionalProperties": False, "required": ["mean"],
     "properties": {"mean": {"type": "array", "items": _CELL, "minItems": 1}}},
    {"type": "object", "additionalProperties": False, "required": ["difference"],
     "properties": {"difference": {"type": "array", "items": _CELL, "minItems": 2, "maxItems": 2}}},
    {"type": "object", "additionalProperties": False, "required": ["row_mean"],
     "properties": {"row_mean": {"type": "string", "pattern": r"^[a-z0-9_]+\.[a-z0-9_]+$"}, "columns": _COLUMNS}},
]}
_PAIRS = {"type": "array", "minItems": 1, "items": {"type": "array", "items": _ROW, "minItems": 2, "maxItems": 2}}
_SET_COMMON = {"table": _ROW, "columns": _COLUMNS, "lower_is_better": {"type": "array", "items": _ROW},
               "ties": {"enum": ["win", "loss"]}, "op": _OP, "k": {"type": "integer", "minimum": 0}}


def _one_key(name: str, body: dict) -> dict:
    """Schema of a predicate written as a one-key mapping `{name: body}`."""
    return {"type": "object", "additionalProperties": False, "required": [name], "properties": {name: body}}


_PREDICATE = {"oneOf": [
    _one_key("compare", {"type": "object", "additionalProperties": False, "required": ["left", "op", "right"],
                         "properties": {"left": _VALUE, "op": _OP, "right": _VALUE,
                                        "tolerance": {"type": "number", "minimum": 0}}}),
    _one_key("count_best", {"type": "object", "additionalProperties": False,
                            "required": ["table", "target", "ties", "op", "k"],
                            "properties": {**_SET_COMMON, "rows": _ROWS, "target": _ROWS}}),
    _one_key("count_pairs", {"type": "object", "additionalProperties": False,
                             "required": ["table", "pairs", "ties", "op", "k"],
                             "properties": {**_SET_COMMON, "pairs": _PAIRS}}),
    _one_key("in_range", {"type": "object", "additionalProperties": False, "required": ["cells", "min", "max"],
                          "properties": {"cells": {"type": "array", "items": _CELL, "minItems": 1},
                                         "min": {"type": "number"}, "max": {"type": "number"}}}),
    _one_key("max_abs_difference", {"type": "object", "additionalProperties": False,
                                    "required": ["table", "pairs", "op", "value"],
                                    "properties": {"table": _ROW, "pairs": _PAIRS, "columns": _COLUMNS, "op": _OP,
                                                   "value": {"type": "number"}}}),
    _one_key("all_of", {"type": "array", "items": {"$ref": "#/$defs/predicate"}, "minItems": 1}),
    _one_key("any_of", {"type": "array", "items": {"$ref": "#/$defs/predicate"}, "minItems": 1}),
]}
_READING = {"type": "object", "additionalProperties": False, "required": ["description", "check"],
            "properties": {"description": {"type": "string", "minLength": 1}, "check": {"$ref": "#/$defs/predicate"}}}
CLAIMS_SCHEMA = {
    "type": "object",
    "propertyNames": {"pattern": r"^[a-z0-9][a-z0-9_]*$"},
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "required": ["sentence", "where"],
        "properties": {
            "sentence": {"type": "string", "minLength": 1},
            "where": {"type": "string", "minLength": 1},
            "note": {"type": "string"},
            "check": {"$ref": "#/$defs/predicate"},
            "readings": {"type": "object", "minProperties": 2, "propertyNames": {"pattern": r"^[a-z0-9_]+$"},
                         "additionalProperties": _READING},
            "not_checkable": {"type": "string", "minLength": 1},
        },
        "oneOf": [{"required": ["check"]}, {"required": ["readings"]}, {"required": ["not_checkable"]}],
    },
    "$defs": {"predicate": _PREDICATE},
}



@dataclass(frozen=True)
class Reading:
    """One way to read a claim: a description and the predicate that decides it."""

    name: str
    description: str
    check: dict


@dataclass(frozen=True)
class Claim:
    """A sentence of the paper, where it stands, and its readings (none when not checkable from tables)."""

    id: str
    paper: str
    sentence: str
    where: str
    readings: tuple[Reading, ...]
    note: str = ""
    not_checkable: str = ""


def _leaves(predicate: dict, where: str = ""):
    """(key path, kind, body) of every predicate that is not all_of / any_of, depth first."""
    kind, body = next(iter(predicate.items()))
    path = f"{where}.{kind}" if where else kind
    if kind in ("all_of", "any_of"):
        for index, part in enumerate(body):
            yield from _leaves(part, f"{path}[{index}]")
    else:
        yield path, kind, body


def _value_refs(value) -> list[tuple[str, str | None, str | None]]:
    """(table, row, column) of the cells a value expression names (column None: a whole row)."""
    if isinstance(value, str):
        return [tuple(value.split("."))]
    if not isinstance(value, dict):
        return []
    if "row_mean" in value:
        table, row = value["row_mean"].split(".")
        columns = value.get("columns")
        return [(table, row, None)] + [(table, None, c) for c in ([] if columns in (None, "all") else columns)]
    return [tuple(ref.split(".")) for ref in next(iter(value.values()))]


def _refs(body: dict, kind: str) -> list[tuple[str, str | None, str | None]]:
    """(table, row or None, column or None) of every table, row and column one leaf predicate names."""
    if kind in ("compare", "in_range"):
        values = [body["left"], body["right"]] if kind == "compare" else body["cells"]
        return [ref for value in values for ref in _value_refs(value)]
    table = body["table"]
    rows = list(body.get("rows", [])) + list(body.get("target", [])) + [r for pair in body.get("pairs", []) for r in pair]
    columns = body.get("columns")
    columns = ([] if columns in (None, "all") else list(columns)) + list(body.get("lower_is_better", []))
    return [(table, row, None) for row in rows] + [(table, None, column) for column in columns]


def claim_tables(claim: Claim) -> set[str]:
    """The tables whose cells any reading of `claim` reads."""
    return {table for reading in claim.readings for _, kind, body in _leaves(reading.check)
            for table, _, _ in _refs(body, kind)}


def table_layout(spec: PaperSpec) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Rows and value columns of every table of `spec`, in the paper's printed order (load_spec
    guarantees a table's rows and columns are exactly its expected CSV's)."""
    rows = {name: list(table.rows) for name, table in spec.tables.items()}
    columns = {name: list(table.columns) for name, table in spec.tables.items()}
    return rows, columns


def _check_refs(path, key: str, predicate: dict, rows: dict[str, list[str]], columns: dict[str, list[str]]) -> None:
    """InputError naming file and key when a predicate names a table, row or column the paper does not
    print, or a count_best target outside its candidate rows."""
    for where, kind, body in _leaves(predicate):
        for table, row, column in _refs(body, kind):
            if table not in rows:
                raise InputError(f"{path}: {key}.{where}: no table {table!r} in this spec")
            if row is not None and row not in rows[table]:
                raise InputError(f"{path}: {key}.{where}: row {row!r} is not in {table}")
            if column is not None and column not in columns[table]:
                raise InputError(f"{path}: {key}.{where}: column {column!r} is not in {table}")
        outside = [row for row in body.get("target", []) if "rows" in body and row not in body["rows"]]
        if outside:
            raise InputError(f"{path}: {key}.{where}: target rows {outside} are not among its rows")


def load_claims(spec: PaperSpec) -> list[Claim]:
    """The claims of `spec`'s YAML, validated: schema, then every named table, row and column.

    InputError names the spec file and the claim's key.
    """
    document = read_yaml(spec.path).get("claims") or {}
    problems = schema_problems(CLAIMS_SCHEMA, document, "claims.")
    if problems:
        raise InputError(f"{spec.path}: invalid claims:\n  " + "\n  ".join(problems))
    rows, columns = table_layout(spec)
    claims = []
    for claim_id, entry in document.items():
        if "check" in entry:
            readings = (Reading("as_stated", "as stated", entry["check"]),)
        else:
            readings = tuple(Reading(name, body["description"], body["check"])
                             for name, body in entry.get("readings", {}).items())
        for reading in readings:
            key = f"claims.{claim_id}" + ("" if "check" in entry else f".readings.{reading.name}") + ".check"
            _check_refs(spec.path, key, reading.check, rows, columns)
        claims.append(Claim(claim_id, spec.paper, entry["sentence"], entry["where"], readings,
                            entry.get("note", ""), entry.get("not_checkable", "")))
    return claims
