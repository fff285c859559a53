"""Replication specs: `replication/<paper>.yaml` maps each printed table onto experiments and tasks.

A spec declares experiments (one trained or released model each) and, per table, which experiment
produced each printed row and which (task, metric) each printed value column reports; `released` maps a
printed row to the released checkpoint of that model, reported beside ours. Loading
validates the YAML against `SPEC_SCHEMA` and cross-checks every table against its expected CSV:
every printed row and value column must be mapped, and nothing may be mapped that is not printed;
every task and metric a column names must be declared in the task registry (`hypvl.tasks`).

A value column is one metric of one task, a mean of several (nested means included, e.g. PoinCLIP Table 4's mean
of the COCO recalls' mean and CIFAR-100 accuracy), or, where the paper reads two ways, named `readings` of which
`reading` is the one compared.
"""

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path

import jsonschema
import yaml

from hypvl.errors import InputError
from hypvl.expected import load_expected
from hypvl.tasks import Task, declared_tasks
from hypvl.yaml_text import SafeLoader

_SLUG = "^[a-z0-9][a-z0-9_]*$"
SEED_MARK = "__seed"  # an experiment trained with another seed than its declared one: <id>__seed<N> (config `seeds`)
_TASK = {"type": "string", "pattern": _SLUG}
_TOLERANCE = {"type": "number", "minimum": 0}
_SCALE = {"type": "number", "exclusiveMinimum": 0}
# a column that reads one model whatever the row (tables whose columns name models, e.g. HierarCaps Table 7)
_EXPERIMENT = {"type": "string", "pattern": _SLUG}

SPEC_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["paper", "title", "experiments", "tables"],
    "properties": {
        "paper": {"type": "string", "pattern": _SLUG},
        "name": {"type": "string", "minLength": 1},  # the paper's short name in reports (default: `paper`)
        "title": {"type": "string", "minLength": 1},
        "claims": {},  # validated by the claims audit
        "experiments": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": _SLUG},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["method", "backbone", "data", "source"],
                "properties": {
                    "method": {"type": "string", "pattern": _SLUG},
                    "backbone": {"type": "string", "pattern": _SLUG},
                    "data": {"type": "string", "pattern": _SLUG},
                    "boxes": {"type": "boolean"},
                    "source": {"type": "string", "pattern": "^(train|released:.+|pretrained:.+)$"},
                    "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
                    "overrides": {"type": "object"},
                    "note": {"type": "string"},
                },
            },
        },
        "tables": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": _SLUG},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["title", "expected", "tolerance", "rows", "columns"],
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "expected": {"type": "string", "pattern": r"^[^/\\]+\.csv$"},
                    "tolerance": _TOLERANCE,
                    "rows": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": {
                            "oneOf": [
                                {"type": "string", "pattern": _SLUG},
                                {
                                    # one model scored another way, e.g. HierarCaps Table 7's single-prompt rows
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["experiment", "tasks"],
                                    "properties": {
                                        "experiment": {"type": "string", "pattern": _SLUG},
                                        "tasks": {"type": "object", "minProperties": 1,
                                                  "propertyNames": {"pattern": _SLUG},
                                                  "additionalProperties": _TASK},
                                    },
                                },
                                {
                                    # a row the paper and its code describe two ways: one experiment per reading,
                                    # `reading` the one compared as the row, each other one as `<row>__<name>`
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["readings", "reading"],
                                    "properties": {
                                        "readings": {"type": "object", "minProperties": 2,
                                                     "propertyNames": {"pattern": _SLUG},
                                                     "additionalProperties": {"type": "string", "pattern": _SLUG}},
                                        "reading": {"type": "string", "pattern": _SLUG},
                                    },
                                },
                                {"$ref": "#/$defs/external"},
                            ]
                        },
                    },
                    "released": {
                        "type": "object",
                        "additionalProperties": {"type": "string", "pattern": _SLUG},
                    },
                    # an ablation: the printed label column whose values the rows vary (the plot's x axis, in
                    # printed order), the label column splitting them into lines, the rows drawn as horizontal
                    # reference lines, and whether the settings are ordered (a line) or not (points)
                    "ablation": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["varies"],
                        "properties": {
                            "varies": {"type": "string", "pattern": "^_"},
                            "series": {"type": "string", "pattern": "^_"},
                            "reference": {"type": "array", "items": {"type": "string", "pattern": _SLUG},
                                          "uniqueItems": True},
                            "ordered": {"type": "boolean"},
                        },
                    },
                    "columns": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": {
                            "oneOf": [
                                {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["task", "metric"],
                                    "properties": {
                                        "task": _TASK, "metric": _TASK, "tolerance": _TOLERANCE, "scale": _SCALE,
                                        "experiment": _EXPERIMENT,
                                    },
                                },
                                {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["mean_of"],
                                    "properties": {
                                        "mean_of": {"$ref": "#/$defs/terms"},
                                        "metric": _TASK,
                                        "tolerance": _TOLERANCE,
                                        "scale": _SCALE,
                                        "experiment": _EXPERIMENT,
                                    },
                                },
                                {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "required": ["readings", "reading"],
                                    "properties": {
                                        "readings": {
                                            "type": "object",
                                            "minProperties": 2,
                                            "propertyNames": {"pattern": _SLUG},
                                            "additionalProperties": {"$ref": "#/$defs/term"},
                                        },
                                        "reading": {"type": "string", "pattern": _SLUG},
                                        "tolerance": _TOLERANCE,
                                        "scale": _SCALE,
                                        "experiment": _EXPERIMENT,
                                    },
                                },
                                {"$ref": "#/$defs/external"},
                            ]
                        },
                    },
                },
            },
        },
    },
    "$defs": {
        # what a mean averages: task ids (of the enclosing `metric`), {task, metric} or nested means
        "terms": {
            "type": "array",
            "minItems": 2,
            "uniqueItems": True,
            "items": {"oneOf": [_TASK, {"$ref": "#/$defs/term"}]},
        },
        "term": {
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["task", "metric"],
                    "properties": {"task": _TASK, "metric": _TASK},
                },
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["mean_of"],
                    "properties": {"mean_of": {"$ref": "#/$defs/terms"}, "metric": _TASK},
                },
            ]
        },
        "external": {
            "type": "object",
            "additionalProperties": False,
            "required": ["external"],
            "properties": {"external": {"type": "string", "minLength": 1}},
        }
    },
}


@dataclass(frozen=True)
class Experiment:
    """One model: how it is built and trained (or where its released weights come from)."""

    id: str
    method: str
    backbone: str
    data: str
    boxes: bool
    source: str
    seed: int
    overrides: dict = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class External:
    """A printed row or column the suite does not reproduce, with the reason."""

    reason: str


@dataclass(frozen=True)
class Measure:
    """One metric of one task."""

    task: str
    metric: str


@dataclass(frozen=True)
class Mean:
    """The mean of several terms (each a Measure or a Mean), as a paper averages columns."""

    terms: tuple["Measure | Mean", ...]


Term = Measure | Mean


def measures(term: Term) -> tuple[Measure, ...]:
    """The Measures a term averages, in order, depth first."""
    return (term,) if isinstance(term, Measure) else tuple(m for sub in term.terms for m in measures(sub))


def common_metric(term: Term) -> str:
    """The metric every measure of `term` reports, or "" where they report different ones."""
    names = {m.metric for m in measures(term)}
    return names.pop() if len(names) == 1 else ""


def renamed(term: Term, tasks: dict[str, str]) -> Term:
    """`term` with each task named in `tasks` replaced by the task it maps to."""
    if isinstance(term, Measure):
        return Measure(tasks.get(term.task, term.task), term.metric)
    return Mean(tuple(renamed(sub, tasks) for sub in term.terms))


def with_tasks(column: "Column", tasks: dict[str, str]) -> "Column":
    """`column` reading, for each task named in `tasks`, the task it maps to (every reading too)."""
    if not tasks:
        return column
    return replace(column, term=renamed(column.term, tasks),
                   readings={name: renamed(term, tasks) for name, term in column.readings.items()})


def term_label(term: Term, metric: str | None = None) -> str:
    """`task`, `task.metric` (where the metric is not `metric`) or `mean(...)` of those."""
    if isinstance(term, Measure):
        return term.task if term.metric == metric else f"{term.task}.{term.metric}"
    return f"mean({','.join(term_label(sub, metric) for sub in term.terms)})"


@dataclass(frozen=True)
class Column:
    """A printed value column: the term it reports (one task's metric, or a mean).

    tolerance: absolute, in printed units; None means the table's tolerance.
    scale: factor from our metric's units to the printed ones (0.01 where a paper prints a percentage
        metric as a fraction).
    readings: where the paper can be read several ways, every reading by name; `reading` names the one
        compared (`term`). Empty for a column with one reading.
    experiment: the experiment every row of the column reads, in place of the row's (a table whose columns name
        models); "" for the row's.
    """

    term: Term
    tolerance: float | None = None
    scale: float = 1.0
    readings: dict[str, Term] = field(default_factory=dict, hash=False)
    reading: str = ""
    experiment: str = ""

    @property
    def tasks(self) -> tuple[str, ...]:
        """The tasks whose metric JSONs the column needs, each once, in order."""
        return tuple(dict.fromkeys(m.task for m in measures(self.term)))

    @property
    def metric(self) -> str:
        """The metric every term reports, or "" where they report different ones."""
        return common_metric(self.term)

    @property
    def is_mean(self) -> bool:
        """True where the paper prints an average (e.g. "Mean(16)")."""
        return isinstance(self.term, Mean)

    @property
    def task_label(self) -> str:
        """The task id, or `mean(task,...)`, naming each term's metric where they differ."""
        return term_label(self.term, self.metric or None)


@dataclass(frozen=True)
class Ablation:
    """How a table varies one setting over its rows: `varies` is the printed label column holding the setting (the
    plot's x axis, in printed order), `series` the label column splitting the rows into lines ("" for one line),
    `reference` the rows drawn as horizontal lines (e.g. the model before fine-tuning), `ordered` False where the
    settings have no order (points, no line)."""

    varies: str
    series: str = ""
    reference: tuple[str, ...] = ()
    ordered: bool = True


ROW_MARK = "__"  # joins a printed row and what else is compared with its numbers: `<row>__released`, `<row>__<reading>`
RELEASED_ROW = f"{ROW_MARK}released"  # suffix of the compare-table row holding a printed row's released checkpoint


@dataclass(frozen=True)
class TableSpec:
    """One printed table: its expected CSV, tolerance, row -> experiment and column -> metric maps,
    `released`: printed row -> the experiment of that row's released checkpoint, compared with the same
    printed numbers as the row (in printed order), `row_tasks`: printed row -> {task: the task the row reads
    in its place} (one model scored another way, e.g. HierarCaps Table 7's single-prompt rows), and
    `row_readings`: printed row -> {reading: experiment} of the readings other than the row's own, each compared
    with the row's printed numbers as `<row>__<reading>` (e.g. HierarCaps Table 5's EC margin as App. C.5 prints
    it)."""

    name: str
    title: str
    expected_path: Path
    tolerance: float
    rows: dict[str, str | External]
    columns: dict[str, Column | External]
    released: dict[str, str] = field(default_factory=dict)
    row_tasks: dict[str, dict[str, str]] = field(default_factory=dict)
    row_readings: dict[str, dict[str, str]] = field(default_factory=dict)
    ablation: Ablation | None = None

    def compared_rows(self) -> dict[str, tuple[str, str | External]]:
        """Every compared row: its id -> (printed row, experiment or External); each printed row, then each
        released checkpoint as `<row>__released`, then each other reading of a row as `<row>__<reading>`."""
        rows = {row: (row, target) for row, target in self.rows.items()}
        rows.update({row + RELEASED_ROW: (row, experiment) for row, experiment in self.released.items()})
        rows.update({f"{row}{ROW_MARK}{name}": (row, experiment) for row, readings in self.row_readings.items()
                     for name, experiment in readings.items()})
        return rows

    def beside(self, row: str) -> str:
        """What a compared row is beside its printed row: "" for the printed row itself, `released` for its released
        checkpoint, `reading <name>` for another reading of it."""
        printed = self.compared_rows()[row][0]
        if row == printed:
            return ""
        other = row.removeprefix(printed + ROW_MARK)
        return other if row == printed + RELEASED_ROW else f"reading {other}"

    def experiments(self) -> list[str]:
        """The experiments of the printed rows and of the columns that name one (not the released checkpoints),
        each once, in printed order."""
        named = [target for target in self.rows.values() if isinstance(target, str)]
        named += [column.experiment for column in self.columns.values() if getattr(column, "experiment", "")]
        return list(dict.fromkeys(named))

    def cell(self, row: str, column: str) -> tuple[str | External, Column | External]:
        """What one cell of a compared row reads: (its experiment, or External; its column, with the row's tasks in
        place of the column's)."""
        printed, experiment = self.compared_rows()[row]
        mapped = self.columns[column]
        if isinstance(mapped, External) or isinstance(experiment, External):
            return experiment, mapped
        return mapped.experiment or experiment, with_tasks(mapped, self.row_tasks.get(printed, {}))

    def tolerance_for(self, column: str) -> float:
        """The absolute tolerance that applies to cells of `column`."""
        mapped = self.columns[column]
        if isinstance(mapped, Column) and mapped.tolerance is not None:
            return mapped.tolerance
        return self.tolerance


@dataclass(frozen=True)
class PaperSpec:
    """A paper's replication spec, loaded from `path` and checked against `expected_dir/<paper>/`."""

    paper: str
    title: str
    path: Path
    experiments: dict[str, Experiment]
    tables: dict[str, TableSpec]
    name: str = ""  # the short name reports show (the spec's `name`, else `paper`)

    def table(self, name: str) -> TableSpec:
        """The table called `name`; InputError names the spec file and the tables it has."""
        if name not in self.tables:
            raise InputError(f"{self.path}: no table {name!r} (tables: {', '.join(self.tables)})")
        return self.tables[name]


class _UniqueKeyLoader(SafeLoader):
    """A YAML loader that rejects a key repeated within one mapping (PyYAML keeps the last).

    Keys merged in with `<<: *anchor` may be overridden; only keys written out are checked.
    """

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> dict:
    """Parse a YAML file; InputError names the file and line of a syntax error or duplicate key."""
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.load(handle, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise InputError(f"{path}: replication spec not found") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise InputError(f"{where}: {getattr(error, 'problem', None) or error}") from None


def _key_path(parts) -> str:
    """Dotted key path of a schema error location, e.g. `tables.table1.columns.imagenet`."""
    return ".".join(str(part) for part in parts) or "<top level>"


def _validate_schema(path: Path, document) -> None:
    """Raise InputError listing every schema violation, each with its dotted key path."""
    validator = jsonschema.Draft202012Validator(SPEC_SCHEMA)
    problems = sorted(_describe(error) for error in validator.iter_errors(document))
    if problems:
        lines = [f"{_key_path(where)}: {message}" for where, message in problems]
        raise InputError(f"{path}: invalid replication spec: " + "; ".join(lines))


def _describe(error) -> tuple[list[str], str]:
    """(key path, message) of one schema error; for a oneOf, those of the closest alternative's complaint."""
    if error.validator == "oneOf" and error.context:
        error = max(error.context, key=lambda sub: (len(sub.absolute_path), sub.validator != "type"))
    return [str(part) for part in error.absolute_path], error.message


def _experiment(experiment_id: str, entry: dict) -> Experiment:
    """Build an Experiment from its validated YAML mapping."""
    return Experiment(
        id=experiment_id,
        method=entry["method"],
        backbone=entry["backbone"],
        data=entry["data"],
        boxes=entry.get("boxes", False),
        source=entry["source"],
        seed=entry.get("seed", 0),
        overrides=dict(entry.get("overrides", {})),
        note=entry.get("note", ""),
    )


def seed_variant(experiment: Experiment, seed: int) -> str:
    """The id of `experiment` trained with `seed`: its own id for its declared seed, else `<id>__seed<N>`."""
    return experiment.id if seed == experiment.seed else f"{experiment.id}{SEED_MARK}{seed}"


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


def _table(path: Path, name: str, entry: dict, expected_dir: Path, paper: str, experiments) -> TableSpec:
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


def default_expected_dir(spec_path) -> Path:
    """`expected/` beside the folder holding the spec: replication/x.yaml -> expected/."""
    return Path(spec_path).resolve().parent.parent / "expected"


def load_spec(path, expected_dir=None) -> PaperSpec:
    """Load and validate `replication/<paper>.yaml`; expected CSVs are read from `expected_dir/<paper>/`.

    Rows and columns come back in the expected CSV's printed order. InputError names the YAML file
    and the offending key.
    """
    path = Path(path)
    expected_dir = Path(expected_dir) if expected_dir is not None else default_expected_dir(path)
    document = _read_yaml(path)
    _validate_schema(path, document)
    paper = document["paper"]
    if paper != path.stem:
        raise InputError(f"{path}: paper: {paper!r} does not match the file name {path.name!r}")
    experiments = {key: _experiment(key, entry) for key, entry in document["experiments"].items()}
    marked = sorted(key for key in experiments if SEED_MARK in key)
    if marked:
        raise InputError(f"{path}: experiments.{marked[0]}: {SEED_MARK!r} is reserved for seed variants")
    tables = {
        name: _table(path, name, entry, expected_dir, paper, experiments)
        for name, entry in document["tables"].items()
    }
    return PaperSpec(paper=paper, title=document["title"], path=path, experiments=experiments, tables=tables,
                     name=document.get("name", paper))


def load_all_specs(replication_dir, expected_dir=None) -> dict[str, PaperSpec]:
    """Load every `*.yaml` under `replication_dir`, keyed by paper; experiment ids must be unique across papers."""
    specs = {}
    owner = {}
    for path in sorted(Path(replication_dir).glob("*.yaml")):
        spec = load_spec(path, expected_dir)
        for experiment_id in spec.experiments:
            if experiment_id in owner:
                raise InputError(
                    f"{path}: experiments.{experiment_id}: id already declared in {owner[experiment_id]}"
                )
            owner[experiment_id] = path
        specs[spec.paper] = spec
    if not specs:
        raise InputError(f"{replication_dir}: no replication specs (*.yaml)")
    return specs


def row_needs(table: TableSpec, row: str) -> set[tuple[str, str]]:
    """The (experiment, task) pairs whose metric JSONs one compared row (`<row>__released` too) of `table` needs."""
    cells = (table.cell(row, column) for column in table.columns)
    return {(experiment, task) for experiment, column in cells
            if isinstance(experiment, str) and isinstance(column, Column) for task in column.tasks}


def table_needs(spec: PaperSpec, table: str) -> set[tuple[str, str]]:
    """The (experiment, task) pairs whose metric JSONs `table` needs: mapped rows (released ones included) x
    mapped columns."""
    table_spec = spec.table(table)
    return {need for row in table_spec.compared_rows() for need in row_needs(table_spec, row)}
