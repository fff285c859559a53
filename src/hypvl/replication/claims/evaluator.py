"""The claims evaluator: a claim's predicates over table cells, on the paper's numbers and on ours.

Each reading evaluates to True, False or None (not evaluable) on the paper's printed numbers and on
ours (the `ours` column of the compare CSVs). A paper token (`-`, `dnc`, `n/a`) is skipped by the
set predicates (count_best, count_pairs); any cell of ours not measured yet makes a reading not
evaluable, so no verdict rests on a partial table. The predicates are the claim language's
(`claims.language`); `verdict` turns a claim's outcomes into the words of the report.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from hypvl.spec.expected import load_expected
from hypvl.replication.claims.language import OPS, Claim, claim_tables, load_claims, table_layout
from hypvl.replication.compare import read_compare_csv
from hypvl.spec.paper import PaperSpec

EQUAL_SLACK = 1e-6  # printed numbers: 51.8 - 37.3 == 14.5 up to float error


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
    values = {}
    for name, table in spec.tables.items():
        for (row, column), cell in load_expected(table.expected_path).cells.items():
            values[(name, row, column)] = cell.value
    return Cells(values, *table_layout(spec), strict=False)


def our_cells(spec: PaperSpec, tables_dir) -> Cells:
    """Our numbers for every table of `spec`, from `tables_dir/<paper>/<table>.csv` (absent file: all missing)."""
    frames = {name: read_compare_csv(path) for name in spec.tables
              if (path := Path(tables_dir) / spec.paper / f"{name}.csv").is_file()}
    return frame_cells(spec, frames)


def frame_cells(spec: PaperSpec, frames: dict) -> Cells:
    """Our numbers from compare tables: table name -> its compare frame (a table not given: all missing)."""
    values = {}
    for name, frame in frames.items():
        for line in frame.itertuples(index=False):
            values[(name, line.row, line.column)] = None if math.isnan(line.ours) else float(line.ours)
    return Cells(values, *table_layout(spec), strict=True)


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
    return _audit(load_claims(spec), paper_cells(spec), our_cells(spec, tables_dir))


def audit_table(spec: PaperSpec, table_name: str, frame) -> tuple[list[Audit], list[Claim]]:
    """The claims on table `table_name`: those reading it alone, evaluated on the paper's numbers and on ours (its
    compare `frame`), and those reading other tables too (whose audit needs them: `reports/claims.md`)."""
    claims = [claim for claim in load_claims(spec) if table_name in claim_tables(claim)]
    alone = [claim for claim in claims if claim_tables(claim) == {table_name}]
    audits = _audit(alone, paper_cells(spec), frame_cells(spec, {table_name: frame}))
    return audits, [claim for claim in claims if claim not in alone]


def _audit(claims: list[Claim], paper: Cells, ours: Cells) -> list[Audit]:
    return [Audit(claim, [evaluate(r.check, paper) for r in claim.readings], [evaluate(r.check, ours) for r in claim.readings])
            for claim in claims]
