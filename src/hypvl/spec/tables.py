"""A printed table's spec, and what each of its cells reads: `TableSpec.cell(row, column)` resolves a compared row
(a printed row, its released checkpoint, or another reading of it) and a value column to (experiment, Column)."""

from dataclasses import dataclass, field
from pathlib import Path

from hypvl.spec.terms import Column, with_tasks


@dataclass(frozen=True)
class External:
    """A printed row or column the suite does not reproduce, with the reason."""

    reason: str


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


def row_needs(table: TableSpec, row: str) -> set[tuple[str, str]]:
    """The (experiment, task) pairs whose metric JSONs one compared row (`<row>__released` too) of `table` needs."""
    cells = (table.cell(row, column) for column in table.columns)
    return {(experiment, task) for experiment, column in cells
            if isinstance(experiment, str) and isinstance(column, Column) for task in column.tasks}
