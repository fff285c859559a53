"""One table of a spec, built from its schema-valid YAML and cross-checked: against its expected CSV (every printed
row and value column mapped, nothing mapped that is not printed), the spec's experiments, and the task registry
(every task and metric a column names declared)."""

import difflib
from pathlib import Path

from hypvl.errors import InputError
from hypvl.spec.expected import load_expected
from hypvl.spec.tables import RELEASED_ROW, ROW_MARK, Ablation, External, TableSpec
from hypvl.spec.terms import Column, Mean, Measure, Term, measures, with_tasks
from hypvl.tasks import Task, declared_tasks


def _term(entry, metric: str | None, where: str) -> Term:
    """A Term from its validated YAML: a task id (of the enclosing `metric`), {task, metric} or {mean_of}."""
    if isinstance(entry, str):
        if metric is None:
            raise InputError(f"{where}: mean_of item {entry!r} names no metric (give `metric` beside `mean_of`, "
                             "or write it as {task, metric})")
        return Measure(entry, metric)
    if "task" in entry:
        return Measure(entry["task"], entry["metric"])
    metric = entry.get("metric", metric)
    return Mean(tuple(_term(item, metric, where) for item in entry["mean_of"]))


def _column(entry: dict, where: str) -> Column | External:
    """Build a Column (or External) from its validated YAML mapping; `where` names it in errors."""
    if "external" in entry:
        return External(entry["external"])
    options = {"tolerance": entry.get("tolerance"), "scale": float(entry.get("scale", 1.0)),
               "experiment": entry.get("experiment", "")}
    if "readings" not in entry:
        return Column(term=_term(entry, entry.get("metric"), where), **options)
    readings = {name: _term(term, None, f"{where}.readings.{name}") for name, term in entry["readings"].items()}
    if entry["reading"] not in readings:
        raise InputError(f"{where}.reading: {_unknown('reading', entry['reading'], readings)}")
    return Column(term=readings[entry["reading"]], readings=readings, reading=entry["reading"], **options)


def _unknown(kind: str, name: str, known) -> str:
    """`unknown <kind> 'name'`, with the closest known names as suggestions."""
    close = difflib.get_close_matches(name, list(known), n=3)
    return f"unknown {kind} {name!r}" + (f" (did you mean {', '.join(map(repr, close))}?)" if close else "")


def _row_readings(where: str, entry: dict) -> tuple[str, dict[str, str]]:
    """(the experiment of the reading compared as the row, {other reading: its experiment}) of a row's
    validated {readings, reading}."""
    readings, chosen = entry["readings"], entry["reading"]
    if chosen not in readings:
        raise InputError(f"{where}.reading: {_unknown('reading', chosen, readings)}")
    if RELEASED_ROW.removeprefix(ROW_MARK) in readings:
        raise InputError(f"{where}.readings: {RELEASED_ROW.removeprefix(ROW_MARK)!r} names the released checkpoint's "
                         "row; call the reading otherwise")
    return readings[chosen], {name: experiment for name, experiment in readings.items() if name != chosen}


def _check_column(where: str, column: Column | External, tasks: dict[str, Task]) -> None:
    """InputError at `where` when the column (any of its readings) names a task or a metric the registry does not
    declare."""
    if isinstance(column, External):
        return
    for term in column.readings.values() or (column.term,):
        for measure in measures(term):
            if measure.task not in tasks:
                raise InputError(f"{where}: {_unknown('task', measure.task, tasks)}")
            declared = [metric.name for metric in tasks[measure.task].metrics]
            if measure.metric not in declared:
                raise InputError(
                    f"{where}: {_unknown(f'metric of task {measure.task!r}', measure.metric, declared)}")


def build_table(path: Path, name: str, entry: dict, expected_dir: Path, paper: str, experiments) -> TableSpec:
    """Build a TableSpec and cross-check it against its expected CSV and the declared experiments."""
    key = f"tables.{name}"
    expected_path = expected_dir / paper / entry["expected"]
    if not expected_path.is_file():
        raise InputError(f"{path}: {key}.expected: expected file {expected_path} does not exist")
    expected = load_expected(expected_path)
    tasks = declared_tasks()
    rows, row_tasks, row_readings = {}, {}, {}
    for row, target in entry["rows"].items():
        if row not in expected.labels:
            raise InputError(f"{path}: {key}.rows.{row}: row {row!r} is not in {expected_path}")
        if isinstance(target, dict) and "tasks" in target:
            row_tasks[row] = dict(target["tasks"])
            target = target["experiment"]
        if isinstance(target, dict) and "readings" in target:
            target, row_readings[row] = _row_readings(f"{path}: {key}.rows.{row}", target)
        for named in [target] + list(row_readings.get(row, {}).values()):
            if isinstance(named, str) and named not in experiments:
                raise InputError(f"{path}: {key}.rows.{row}: unknown experiment {named!r} (not under experiments)")
        rows[row] = target if isinstance(target, str) else External(target["external"])
    columns = {}
    for column, target in entry["columns"].items():
        if column not in expected.columns:
            raise InputError(f"{path}: {key}.columns.{column}: value column {column!r} is not in {expected_path}")
        where = f"{path}: {key}.columns.{column}"
        columns[column] = _column(target, where)
        _check_column(where, columns[column], tasks)
        named = getattr(columns[column], "experiment", "")
        if named and named not in experiments:
            raise InputError(f"{where}.experiment: unknown experiment {named!r} (not under experiments)")
        if named and entry.get("released"):
            raise InputError(f"{where}.experiment: a column of one experiment cannot sit in a table with "
                             "`released` rows")
    read = {measure.task for column in columns.values() if isinstance(column, Column)
            for term in column.readings.values() or (column.term,) for measure in measures(term)}
    for row, renames in row_tasks.items():
        where = f"{path}: {key}.rows.{row}.tasks"
        unread = sorted(set(renames) - read)
        if unread:
            raise InputError(f"{where}: {_unknown('task of the columns', unread[0], read)}")
        for column, mapped in columns.items():
            if isinstance(mapped, Column):
                _check_column(f"{where} (column {column})", with_tasks(mapped, renames), tasks)
    released = {}
    for row, experiment in entry.get("released", {}).items():
        where = f"{path}: {key}.released.{row}"
        if not isinstance(rows.get(row), str):
            raise InputError(f"{where}: {row!r} is not a printed row mapped to an experiment")
        declared = experiments.get(experiment)
        if declared is None or not declared.source.startswith("released:"):
            raise InputError(f"{where}: {experiment!r} is not an experiment with a released: source")
        released[row] = experiment
    unmapped_rows = [row for row in expected.rows if row not in rows]
    if unmapped_rows:
        raise InputError(f"{path}: {key}.rows: rows of {expected_path} not mapped: {', '.join(unmapped_rows)}")
    unmapped_columns = [column for column in expected.columns if column not in columns]
    if unmapped_columns:
        raise InputError(
            f"{path}: {key}.columns: value columns of {expected_path} not mapped: {', '.join(unmapped_columns)}"
        )
    return TableSpec(
        name=name,
        ablation=_ablation(f"{path}: {key}.ablation", entry.get("ablation"), expected, expected_path),
        title=entry["title"],
        expected_path=expected_path,
        tolerance=float(entry["tolerance"]),
        rows={row: rows[row] for row in expected.rows},
        columns={column: columns[column] for column in expected.columns},
        released={row: released[row] for row in expected.rows if row in released},
        row_tasks={row: row_tasks[row] for row in expected.rows if row in row_tasks},
        row_readings={row: row_readings[row] for row in expected.rows if row in row_readings},
    )


def _ablation(where: str, entry: dict | None, expected, expected_path: Path) -> Ablation | None:
    """An Ablation from its validated YAML, checked against the expected CSV: label columns it has, printed rows, and
    a setting in every row not drawn as a reference."""
    if entry is None:
        return None
    ablation = Ablation(entry["varies"], entry.get("series", ""), tuple(entry.get("reference", ())),
                        entry.get("ordered", True))
    labels = list(expected.labels[expected.rows[0]])
    for key in ("varies", "series"):
        name = getattr(ablation, key)
        if name and name not in labels:
            raise InputError(f"{where}.{key}: {_unknown(f'label column of {expected_path}', name, labels)}")
    for row in ablation.reference:
        if row not in expected.labels:
            raise InputError(f"{where}.reference: {_unknown(f'row of {expected_path}', row, expected.rows)}")
    unset = [row for row in expected.rows if row not in ablation.reference and not expected.labels[row][ablation.varies]]
    if unset:
        raise InputError(f"{where}.varies: rows {', '.join(unset)} print no {ablation.varies!r} (list them under "
                         "`reference`)")
    return ablation
