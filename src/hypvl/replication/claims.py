"""The claims audit: every explicit quantitative claim of a paper, as a predicate over table cells.

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

Each reading evaluates to True, False or None (not evaluable) on the paper's printed numbers and on
ours (the `ours` column of the compare CSVs). A paper token (`-`, `dnc`, `n/a`) is skipped by the
set predicates (count_best, count_pairs); any cell of ours not measured yet makes a reading not
evaluable, so no verdict rests on a partial table.
"""

import math
import operator
from dataclasses import dataclass
from pathlib import Path

import jsonschema

from hypvl.errors import InputError
from hypvl.io import atomic_write
from hypvl.replication.compare import read_compare_csv
from hypvl.expected import load_expected
from hypvl.replication.report import escape
from hypvl.spec import PaperSpec, _describe, _key_path, _read_yaml

OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": None, "!=": None}
EQUAL_SLACK = 1e-6  # printed numbers: 51.8 - 37.3 == 14.5 up to float error
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


@dataclass(frozen=True)
class Outcome:
    """A predicate's result: holds (None = not evaluable), what was computed, and cells it lacked."""

    holds: bool | None
    detail: str
    missing: tuple[str, ...] = ()


class Cells:
    """Numbers of one paper's tables, from its expected CSVs (`paper`) or its compare CSVs (`ours`).

    values[(table, row, column)] -> float, or None where there is no number. With `strict`, a
    missing number makes any predicate touching it not evaluable (ours); otherwise set predicates
    skip it (the paper's `-`, `dnc`, `n/a`).
    """

    def __init__(self, values: dict, rows: dict, columns: dict, strict: bool):
        self.values, self.rows, self.columns, self.strict = values, rows, columns, strict

    def get(self, ref: str) -> float | None:
        """The number at `table.row.column`."""
        return self.values.get(tuple(ref.split(".")))


def paper_cells(spec: PaperSpec) -> Cells:
    """The paper's printed numbers for every table of `spec`."""
    values, rows, columns = {}, {}, {}
    for name, table in spec.tables.items():
        expected = load_expected(table.expected_path)
        rows[name], columns[name] = list(expected.rows), list(expected.columns)
        for (row, column), cell in expected.cells.items():
            values[(name, row, column)] = cell.value
    return Cells(values, rows, columns, strict=False)


def our_cells(spec: PaperSpec, tables_dir) -> Cells:
    """Our numbers for every table of `spec`, from `tables_dir/<paper>/<table>.csv` (absent file: all missing)."""
    values, rows, columns = {}, {}, {}
    for name, table in spec.tables.items():
        rows[name], columns[name] = list(table.rows), list(table.columns)
        path = Path(tables_dir) / spec.paper / f"{name}.csv"
        if not path.is_file():
            continue
        for line in read_compare_csv(path).itertuples(index=False):
            values[(name, line.row, line.column)] = None if math.isnan(line.ours) else float(line.ours)
    return Cells(values, rows, columns, strict=True)


def _compare(left: float, op: str, right: float, tolerance: float = EQUAL_SLACK) -> bool:
    """left <op> right; == and != allow `tolerance`."""
    if op == "==":
        return abs(left - right) <= tolerance
    if op == "!=":
        return abs(left - right) > tolerance
    return OPS[op](left, right)


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _value(spec, cells: Cells) -> tuple[float | None, str, tuple[str, ...]]:
    """Evaluate a value expression: (number or None, how it reads, cells lacking a number)."""
    if isinstance(spec, (int, float)):
        return float(spec), _fmt(spec), ()
    if isinstance(spec, str):
        value = cells.get(spec)
        return value, f"{spec}={'?' if value is None else _fmt(value)}", () if value is not None else (spec,)
    if "row_mean" in spec:
        table, row = spec["row_mean"].split(".")
        columns = spec.get("columns")
        over = "" if columns in (None, "all") else f" over {len(columns)} columns"
        kind, label = "mean", f"mean({spec['row_mean']}{over})"
        refs = [f"{table}.{row}.{column}" for column in _columns(cells, table, spec.get("columns"))]
    else:
        kind, refs = next(iter(spec.items()))
        label = f"{kind}({', '.join(refs)})"
    numbers = [cells.get(ref) for ref in refs]
    missing = tuple(ref for ref, value in zip(refs, numbers) if value is None)
    if missing:
        return None, label, missing
    result = sum(numbers) / len(numbers) if kind == "mean" else numbers[0] - numbers[1]
    return result, f"{label}={_fmt(result)}", ()


def _columns(cells: Cells, table: str, columns) -> list[str]:
    return cells.columns[table] if columns in (None, "all") else list(columns)


def _beats(a: float, b: float, lower: bool) -> bool:
    return a < b if lower else a > b


def _count_best(body: dict, cells: Cells) -> Outcome:
    """Columns where the best target row is the best among `rows` (a shared best counts as `ties`)."""
    table = body["table"]
    rows = body.get("rows") or cells.rows[table]
    lower = set(body.get("lower_is_better", []))
    wins, ties, missing = [], [], []
    for column in _columns(cells, table, body.get("columns")):
        numbers = {row: cells.get(f"{table}.{row}.{column}") for row in rows}
        absent = [f"{table}.{row}.{column}" for row, value in numbers.items() if value is None]
        if absent and cells.strict:
            missing += absent
            continue
        present = {row: value for row, value in numbers.items() if value is not None}
        targets = [present[row] for row in body["target"] if row in present]
        others = [value for row, value in present.items() if row not in body["target"]]
        if not targets:
            continue
        best = min(targets) if column in lower else max(targets)
        if any(_beats(other, best, column in lower) for other in others):
            continue
        if any(other == best for other in others):
            ties.append(column)
            if body["ties"] == "loss":
                continue
        wins.append(column)
    if missing:
        return Outcome(None, f"{len(missing)} cells not measured", tuple(missing))
    count = len(wins)
    detail = f"best in {count} columns ({', '.join(wins) or 'none'})"
    if ties:
        detail += f"; tied best in {', '.join(ties)} (ties count as {body['ties']})"
    return Outcome(_compare(count, body["op"], body["k"]), f"{detail}; claim: {body['op']} {body['k']}")


def _pair_cells(body: dict, cells: Cells) -> tuple[list[tuple], list[str]]:
    """(a, b, column, value of a, value of b) for every row pair and column with both numbers, and the
    references of the cells without one."""
    table, measured, missing = body["table"], [], []
    for a, b in body["pairs"]:
        for column in _columns(cells, table, body.get("columns")):
            left, right = cells.get(f"{table}.{a}.{column}"), cells.get(f"{table}.{b}.{column}")
            if left is None or right is None:
                missing += [f"{table}.{row}.{column}" for row, v in ((a, left), (b, right)) if v is None]
            else:
                measured.append((a, b, column, left, right))
    return measured, missing


def _count_pairs(body: dict, cells: Cells) -> Outcome:
    """(pair, column) cells where row a beats row b (equal values count as `ties`)."""
    lower = set(body.get("lower_is_better", []))
    wins, losses, ties = 0, [], []
    measured, missing = _pair_cells(body, cells)
    for a, b, column, left, right in measured:
        if left == right:
            ties.append(f"{a}~{b}.{column}")
            wins += body["ties"] == "win"
        elif _beats(left, right, column in lower):
            wins += 1
        else:
            losses.append(f"{a}<{b}.{column}")
    if missing and cells.strict:
        return Outcome(None, f"{len(missing)} cells not measured", tuple(missing))
    detail = f"{wins} wins"
    if ties:
        detail += f"; ties ({body['ties']}): {', '.join(ties)}"
    if losses:
        detail += f"; losses: {', '.join(losses)}"
    return Outcome(_compare(wins, body["op"], body["k"]), f"{detail}; claim: {body['op']} {body['k']}")


def _in_range(body: dict, cells: Cells) -> Outcome:
    numbers = {ref: cells.get(ref) for ref in body["cells"]}
    missing = tuple(ref for ref, value in numbers.items() if value is None)
    if missing:
        return Outcome(None, f"{len(missing)} cells without a number", missing)
    outside = [f"{ref}={_fmt(v)}" for ref, v in numbers.items() if not body["min"] <= v <= body["max"]]
    span = f"[{_fmt(min(numbers.values()))}, {_fmt(max(numbers.values()))}]"
    detail = f"values span {span}; claim: within [{_fmt(body['min'])}, {_fmt(body['max'])}]"
    return Outcome(not outside, detail + (f"; outside: {', '.join(outside)}" if outside else ""))


def _max_abs_difference(body: dict, cells: Cells) -> Outcome:
    measured, missing = _pair_cells(body, cells)
    gaps = [(abs(left - right), f"{a}/{b}.{column}") for a, b, column, left, right in measured]
    if (missing and cells.strict) or not gaps:
        return Outcome(None, f"{len(missing)} cells not measured", tuple(missing))
    largest, where = max(gaps)
    holds = _compare(round(largest, 9), body["op"], body["value"])
    return Outcome(holds, f"max |difference| {_fmt(largest)} at {where}; claim: {body['op']} {_fmt(body['value'])}")


def _compare_predicate(body: dict, cells: Cells) -> Outcome:
    left, left_text, left_missing = _value(body["left"], cells)
    right, right_text, right_missing = _value(body["right"], cells)
    detail = f"{left_text} {body['op']} {right_text}"
    if left is None or right is None:
        return Outcome(None, detail, left_missing + right_missing)
    return Outcome(_compare(left, body["op"], right, body.get("tolerance", EQUAL_SLACK)), detail)


def _combine(kind: str, parts: list, cells: Cells) -> Outcome:
    """all_of / any_of: not evaluable when any part is (so a verdict never rests on a partial table)."""
    outcomes = [evaluate(part, cells) for part in parts]
    missing = tuple(ref for outcome in outcomes for ref in outcome.missing)
    detail = "; ".join(("✓ " if o.holds else "✗ " if o.holds is False else "? ") + o.detail for o in outcomes)
    if any(outcome.holds is None for outcome in outcomes):
        return Outcome(None, detail, missing)
    combine = all if kind == "all_of" else any
    return Outcome(combine(outcome.holds for outcome in outcomes), detail)


_EVALUATORS = {"compare": _compare_predicate, "count_best": _count_best, "count_pairs": _count_pairs,
               "in_range": _in_range, "max_abs_difference": _max_abs_difference}


def evaluate(predicate: dict, cells: Cells) -> Outcome:
    """Evaluate one validated predicate over `cells`."""
    kind, body = next(iter(predicate.items()))
    if kind in ("all_of", "any_of"):
        return _combine(kind, body, cells)
    return _EVALUATORS[kind](body, cells)


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


def _check_refs(path, key: str, predicate: dict, cells: Cells) -> None:
    """InputError naming file and key when a predicate names a table, row or column the paper does not
    print, or a count_best target outside its candidate rows."""
    for where, kind, body in _leaves(predicate):
        for table, row, column in _refs(body, kind):
            if table not in cells.rows:
                raise InputError(f"{path}: {key}.{where}: no table {table!r} in this spec")
            if row is not None and row not in cells.rows[table]:
                raise InputError(f"{path}: {key}.{where}: row {row!r} is not in {table}")
            if column is not None and column not in cells.columns[table]:
                raise InputError(f"{path}: {key}.{where}: column {column!r} is not in {table}")
        outside = [row for row in body.get("target", []) if "rows" in body and row not in body["rows"]]
        if outside:
            raise InputError(f"{path}: {key}.{where}: target rows {outside} are not among its rows")


def load_claims(spec: PaperSpec) -> list[Claim]:
    """The claims of `spec`'s YAML, validated: schema, then every named table, row and column.

    InputError names the spec file and the claim's key.
    """
    document = _read_yaml(spec.path).get("claims") or {}
    validator = jsonschema.Draft202012Validator(CLAIMS_SCHEMA)
    problems = sorted(_describe(error) for error in validator.iter_errors(document))
    if problems:
        lines = [f"claims.{_key_path(where)}: {message}" for where, message in problems]
        raise InputError(f"{spec.path}: invalid claims:\n  " + "\n  ".join(lines))
    cells = paper_cells(spec)
    claims = []
    for claim_id, entry in document.items():
        if "check" in entry:
            readings = (Reading("as_stated", "as stated", entry["check"]),)
        else:
            readings = tuple(Reading(name, body["description"], body["check"])
                             for name, body in entry.get("readings", {}).items())
        for reading in readings:
            key = f"claims.{claim_id}" + ("" if "check" in entry else f".readings.{reading.name}") + ".check"
            _check_refs(spec.path, key, reading.check, cells)
        claims.append(Claim(claim_id, spec.paper, entry["sentence"], entry["where"], readings,
                            entry.get("note", ""), entry.get("not_checkable", "")))
    return claims


PAPER_UNKNOWN = "no number printed"
OURS_UNKNOWN = "not evaluable yet"


def verdict(claim: Claim, outcomes: list[Outcome], unknown: str = OURS_UNKNOWN) -> str:
    """supported / contradicted / supported only under reading(s) X / `unknown` / not checkable.

    `unknown` names why a reading could not be decided: PAPER_UNKNOWN on the paper's numbers (a
    token where the predicate needs a number), OURS_UNKNOWN on ours (cells not measured yet).
    """
    if claim.not_checkable:
        return "not checkable from tables"
    held = [reading.name for reading, outcome in zip(claim.readings, outcomes) if outcome.holds]
    if any(outcome.holds is None for outcome in outcomes):
        return unknown if not held else f"supported only under {', '.join(held)}; others: {unknown}"
    if len(held) == len(outcomes):
        return "supported" if len(outcomes) == 1 else "supported under every reading"
    if not held:
        return "contradicted"
    return f"supported only under {', '.join(held)}"


@dataclass(frozen=True)
class Audit:
    """One claim's outcomes per reading, on the paper's numbers and on ours."""

    claim: Claim
    paper: list[Outcome]
    ours: list[Outcome]

    @property
    def paper_verdict(self) -> str:
        return verdict(self.claim, self.paper, PAPER_UNKNOWN)

    @property
    def our_verdict(self) -> str:
        return verdict(self.claim, self.ours)


def audit_paper(spec: PaperSpec, tables_dir) -> list[Audit]:
    """Evaluate every claim of `spec` on the paper's numbers and on ours (compare CSVs under `tables_dir`)."""
    paper, ours = paper_cells(spec), our_cells(spec, tables_dir)
    return [Audit(claim, [evaluate(r.check, paper) for r in claim.readings], [evaluate(r.check, ours) for r in claim.readings])
            for claim in load_claims(spec)]


def _md(text: str) -> str:
    """Text as literal markdown on one line: specials escaped (e.g. `τ_d`, `a<b`), newlines folded."""
    return escape(text.replace("\n", " "))


def render_claims(audits: dict[str, list[Audit]], scale: str) -> str:
    """The claims report: a summary, then per paper each claim with its verdicts and per-reading details."""
    every = [audit for paper in audits.values() for audit in paper]
    checkable = [a for a in every if not a.claim.not_checkable]
    paper_counts = _tally(a.paper_verdict for a in checkable)
    our_counts = _tally(a.our_verdict for a in checkable)
    contradicted = [a for a in checkable if category(a.paper_verdict) == "contradicted"]
    partial = [a for a in checkable if category(a.paper_verdict) == "one reading"]
    smoke_note = "; smoke numbers show the pipeline computes the claim, not that it replicates" if scale != "full" else ""
    lines = ["# Claims audit", "",
             "Every explicit quantitative claim of the papers, as a predicate over table cells, evaluated on the "
             f"paper's printed numbers and on ours (scale `{scale}`{smoke_note}).", "",
             "## Summary", "",
             f"- {len(every)} claims: {len(checkable)} checkable from the tables, "
             f"{len(every) - len(checkable)} stated in prose only.",
             f"- By the papers' own numbers: {_tally_text(paper_counts, PAPER_UNKNOWN)}.",
             f"- By ours: {_tally_text(our_counts, OURS_UNKNOWN)}.", ""]
    if contradicted:
        lines += ["Contradicted by the paper's own tables:", ""]
        lines += [f"- `{a.claim.id}` ({a.claim.paper}, {_md(a.claim.where)}): \"{_md(a.claim.sentence)}\"" for a in contradicted]
        lines.append("")
    if partial:
        lines += ["Supported by the paper's own tables only under one reading:", ""]
        lines += [f"- `{a.claim.id}` ({a.claim.paper}, {_md(a.claim.where)}): {_md(a.paper_verdict)}" for a in partial]
        lines.append("")
    for paper, paper_audits in audits.items():
        lines += [f"## {paper}", "", "| claim | sentence | where | paper's numbers | ours |", "|---|---|---|---|---|"]
        for a in paper_audits:
            lines.append(f"| `{a.claim.id}` | \"{_md(a.claim.sentence)}\" | {_md(a.claim.where)} | "
                         f"{_md(a.paper_verdict)} | {_md(a.our_verdict)} |")
        lines.append("")
        for a in paper_audits:
            lines.append(f"### `{a.claim.id}`")
            lines.append("")
            lines.append(f"> {_md(a.claim.sentence)} ({_md(a.claim.where)})")
            lines.append("")
            if a.claim.note:
                lines += [_md(a.claim.note), ""]
            if a.claim.not_checkable:
                lines += [f"Not checkable from the tables: {_md(a.claim.not_checkable)}", ""]
                continue
            for reading, mine, theirs in zip(a.claim.readings, a.ours, a.paper):
                ours = mine.detail if mine.holds is not None else _missing_text(mine)
                lines.append(f"- **{_md(reading.name)}** ({_md(reading.description)}): paper {_mark(theirs)} "
                             f"{_md(theirs.detail)}; ours {_mark(mine)} {_md(ours)}")
            lines.append("")
    return "\n".join(lines)


CATEGORIES = ("supported", "one reading", "contradicted", "not evaluable")


def category(text: str) -> str:
    """The summary category of a verdict: supported, one reading, contradicted or not evaluable."""
    if text.startswith("supported only under") and not text.endswith(OURS_UNKNOWN):
        return "one reading"
    if text.endswith((OURS_UNKNOWN, PAPER_UNKNOWN)):
        return "not evaluable"
    return "contradicted" if text == "contradicted" else "supported"


def _tally(verdicts) -> dict[str, int]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for text in verdicts:
        counts[category(text)] += 1
    return counts


def _tally_text(counts: dict[str, int], unknown: str) -> str:
    names = {"one reading": "supported only under one reading", "not evaluable": unknown}
    return ", ".join(f"{counts[name]} {names.get(name, name)}" for name in CATEGORIES)


def _mark(outcome: Outcome) -> str:
    return {True: "✓", False: "✗", None: "?"}[outcome.holds]


def _missing_text(outcome: Outcome) -> str:
    shown = ", ".join(outcome.missing[:4]) + (" ..." if len(outcome.missing) > 4 else "")
    return f"not evaluable yet ({len(outcome.missing)} cells missing: {shown})"


def write_claims_report(specs: dict[str, PaperSpec], tables_dir, scale: str, out) -> dict[str, list[Audit]]:
    """Audit every spec's claims and write the markdown report to `out` atomically; return the audits."""
    audits = {paper: audit_paper(spec, tables_dir) for paper, spec in sorted(specs.items())}
    with atomic_write(out, mode="w", encoding="utf-8") as handle:
        handle.write(render_claims(audits, scale))
    return audits
