"""Each compared cell's standing: its difference from the paper in units of its own column's tolerance, signed by the
metric's direction (task registry) so that positive is better than the paper, in the unit its column prints.

What the plots colour and the reports mark: a cell half a tolerance off is within whatever its unit, and a
lower-is-better metric (TIE, LCA) that went down has improved.
"""

from dataclasses import dataclass

import pandas as pd

from hypvl.spec.paper import PaperSpec
from hypvl.spec.terms import Column, measures
from hypvl.tasks import declared_tasks

# standing -> what it says (the order of the plots' and reports' legends)
STANDINGS = {
    "within": "within tolerance",
    "within_seed_spread": "outside tolerance, within the seed spread",
    "better": "better than the paper, outside tolerance",
    "worse": "worse than the paper, outside tolerance",
    "off": "outside tolerance (a metric with no direction)",
    "not_comparable": "not comparable (not paper scale)",
    "none": "no difference (no paper number, no number of ours, or external)",
}


@dataclass(frozen=True)
class ColumnUnit:
    """What a printed value column's numbers are: unit as printed, direction (+1 higher is better, -1 lower is
    better, 0 none or mixed) and tolerance (absolute, in that unit)."""

    unit: str
    direction: int
    tolerance: float


def _printed_unit(metric, scale: float) -> str:
    """The unit a column prints a metric in, given the column's factor from our units to the printed ones."""
    if scale == 1.0:
        return metric.unit_label
    if (metric.kind, scale) == ("percent", 0.01):
        return "fraction"
    if (metric.kind, scale) == ("fraction", 100.0):
        return "%"
    return f"{metric.unit_label} × {scale:g}"


def column_units(spec: PaperSpec, table_name: str) -> dict[str, ColumnUnit]:
    """Printed value column -> its ColumnUnit (an external column: unit "", no direction)."""
    table = spec.table(table_name)
    tasks = declared_tasks()
    units = {}
    for name, column in table.columns.items():
        if not isinstance(column, Column):
            units[name] = ColumnUnit("", 0, table.tolerance_for(name))
            continue
        metrics = [tasks[m.task].metric(m.metric) for m in measures(column.term)]
        printed = sorted({_printed_unit(metric, column.scale) for metric in metrics})
        directions = {metric.higher_is_better for metric in metrics}
        direction = {True: 1, False: -1, None: 0}[directions.pop()] if len(directions) == 1 else 0
        units[name] = ColumnUnit(" / ".join(printed), direction, table.tolerance_for(name))
    return units


def _standing(verdict: str, signed: float) -> str:
    """A cell's standing from its verdict and its signed difference in tolerances (NaN where there is none)."""
    if verdict in ("within", "within_seed_spread", "not_comparable", "extra"):
        return verdict
    if verdict != "outside":
        return "none"
    return "off" if pd.isna(signed) else ("better" if signed > 0 else "worse")


def standings(frame: pd.DataFrame, spec: PaperSpec, table_name: str) -> pd.DataFrame:
    """The compare frame with `unit`, `direction`, `signed` ((ours − paper) / tolerance, times the direction where
    the metric has one), `signed_spread` (the seeds' standard deviation in tolerances) and `standing` per cell."""
    units = column_units(spec, table_name)
    out = frame.copy()
    out["unit"] = [units[column].unit for column in frame["column"]]
    out["direction"] = [units[column].direction for column in frame["column"]]
    scale = frame["tolerance"].where(frame["tolerance"] > 0)  # a zero tolerance: no tolerance units
    out["signed"] = frame["delta"] / scale * out["direction"].replace(0, 1)
    out["signed_spread"] = frame["spread"] / scale
    undirected = out["direction"] == 0
    out["standing"] = [_standing(verdict, float("nan") if flat else signed)
                       for verdict, signed, flat in zip(frame["verdict"], out["signed"], undirected)]
    return out
