"""A paper's spec: its experiments (seed variants included) and its tables, and the metric JSONs a table needs."""

from dataclasses import dataclass, field
from pathlib import Path

from hypvl.errors import InputError
from hypvl.spec.tables import TableSpec, row_needs

SEED_MARK = "__seed"  # an experiment trained with another seed than its declared one: <id>__seed<N> (config `seeds`)


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


def seed_variant(experiment: Experiment, seed: int) -> str:
    """The id of `experiment` trained with `seed`: its own id for its declared seed, else `<id>__seed<N>`."""
    return experiment.id if seed == experiment.seed else f"{experiment.id}{SEED_MARK}{seed}"


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


def table_needs(spec: PaperSpec, table: str) -> set[tuple[str, str]]:
    """The (experiment, task) pairs whose metric JSONs `table` needs: mapped rows (released ones included) x
    mapped columns."""
    table_spec = spec.table(table)
    return {need for row in table_spec.compared_rows() for need in row_needs(table_spec, row)}
