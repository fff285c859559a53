"""An ablation table drawn as the paper argues from it: one panel per value column, the varied setting (the spec's
`ablation.varies`) on the x axis in printed order, a line per series for the paper (solid) and for ours (dashed,
error bars of the seeds' standard deviation where a row has several), reference rows as horizontal lines.

Paper and ours share one axis in every panel, as they share a unit: two axes scaled apart would make a one-point
plateau of the paper look like the rise ours "matches". At paper scale the paper's line carries its tolerance band
and our markers the verdict's colour (hypvl.replication.plots), keyed below the panels; at any other scale ours is
not comparable, drawn fainter, and the title says so.
"""

import math
import textwrap

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hypvl.spec.expected import ExpectedTable  # noqa: E402
from hypvl.replication.plots import cell_colour, legend_patches  # noqa: E402
from hypvl.spec.tables import Ablation  # noqa: E402

COMPARABLE = ("within", "within_seed_spread", "better", "worse", "off")
_REFERENCE_COLOURS = ("0.35", "tab:brown", "tab:pink", "tab:olive")


def _label(name: str) -> str:
    """A label column's printed name: `_eta_inter` -> `eta inter`."""
    return name.lstrip("_").replace("_", " ")


def _series(expected: ExpectedTable, ablation: Ablation) -> dict[str, list[str]]:
    """Series name -> its rows (not the references), in printed order."""
    series: dict[str, list[str]] = {}
    for row in expected.rows:
        if row not in ablation.reference:
            series.setdefault(expected.labels[row][ablation.series] if ablation.series else "", []).append(row)
    return series


def _panel(axis, lines: dict, column: str, expected: ExpectedTable, ablation: Ablation, comparable: bool) -> None:
    """One value column: paper and ours per series over the settings, the reference rows as horizontal lines."""
    settings = list(dict.fromkeys(expected.labels[row][ablation.varies] for row in expected.rows
                                  if row not in ablation.reference))
    style = "-" if ablation.ordered else "none"
    for index, (name, rows) in enumerate(_series(expected, ablation).items()):
        colour = f"C{index}"
        cells = [lines[(row, column)] for row in rows]
        xs = [settings.index(expected.labels[row][ablation.varies]) for row in rows]
        paper = [cell.paper for cell in cells]
        suffix = f": {_label(ablation.series)} = {name}" if name else ""
        axis.plot(xs, paper, linestyle=style, marker="o", color=colour, label=f"paper{suffix}")
        if comparable and ablation.ordered:
            tolerance = cells[0].tolerance
            axis.fill_between(xs, [p - tolerance for p in paper], [p + tolerance for p in paper], color=colour,
                              alpha=0.12, linewidth=0)
        ours = [cell.ours for cell in cells]
        spread = [cell.spread if pd.notna(cell.n_seeds) and cell.n_seeds > 1 else 0.0 for cell in cells]
        axis.errorbar(xs, ours, yerr=spread, linestyle="--" if ablation.ordered else "none", marker="s",
                           color=colour, alpha=1.0 if comparable else 0.55, capsize=3, label=f"ours{suffix}",
                           markersize=6)
        for x, cell in zip(xs, cells):
            if comparable and pd.notna(cell.ours):
                axis.plot([x], [cell.ours], marker="s", markersize=6, linestyle="none", markeredgecolor=colour,
                               color=cell_colour(cell.standing, cell.signed), zorder=3)  # over the error bars
    for index, row in enumerate(ablation.reference):
        cell, colour = lines[(row, column)], _REFERENCE_COLOURS[index % len(_REFERENCE_COLOURS)]
        label = " ".join(text for text in expected.labels[row].values() if text) or row
        if pd.notna(cell.paper):
            axis.axhline(cell.paper, color=colour, linewidth=1, label=f"paper: {label}")
        if pd.notna(cell.ours):
            axis.axhline(cell.ours, color=colour, linewidth=1, linestyle="--", label=f"ours: {label}")
    rotate = max(map(len, settings)) > 6
    axis.set_xticks(range(len(settings)), settings, rotation=40 if rotate else 0, ha="right" if rotate else "center",
                    fontsize=7)
    axis.set_xlim(-0.5, len(settings) - 0.5)
    axis.set_xlabel(_label(ablation.varies), fontsize=8)
    unit = next(cell.unit for key, cell in lines.items() if key[1] == column)
    axis.set_title(f"{column} ({unit})" if unit else column, fontsize=8)
    axis.tick_params(labelsize=7)
    if not comparable:
        axis.set_ylabel("paper and ours (not comparable)", fontsize=7)


def draw_ablation(frame: pd.DataFrame, expected: ExpectedTable, ablation: Ablation, title: str):
    """The ablation figure of a standings frame (hypvl.replication.standing.standings) of a table with an `ablation`
    spec; one panel per value column with a number of ours or the paper's. Returns the matplotlib Figure."""
    lines = {(line.row, line.column): line for line in frame.itertuples(index=False)}
    comparable = bool(frame["standing"].isin(COMPARABLE).any())
    columns = [column for column in expected.columns
               if frame.loc[frame["column"] == column, ["paper", "ours"]].notna().any(axis=None)]
    columns = columns or list(expected.columns)
    n_columns = min(3, len(columns))
    n_rows = math.ceil(len(columns) / n_columns)
    width = max(4.6 * n_columns, 8.0)  # wide enough for the title and the legend under a single panel
    figure, axes = plt.subplots(n_rows, n_columns, squeeze=False, figsize=(width, 3.4 * n_rows + 1.2))
    for axis, column in zip(axes.flat, columns):
        _panel(axis, lines, column, expected, ablation, comparable)
    for axis in list(axes.flat)[len(columns):]:
        axis.set_axis_off()
    handles = {}
    for axis in figure.axes:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    if comparable:  # the key of our markers' colours
        handles.update({f"ours: {patch.get_label()}": patch for patch in legend_patches(frame)})
    figure.legend(handles.values(), handles.keys(), loc="lower center", ncol=min(4, len(handles)), fontsize=7,
                  frameon=False)
    note = ("ours on the paper's axis; band: the paper ± tolerance; marker colour: the verdict" if comparable else
            "ours (dashed, fainter) is not comparable to the paper at this scale: one axis, neither the level nor the "
            "trend is a finding")
    figure.suptitle("\n".join([title, *textwrap.wrap(note, int(width * 14))]), fontsize=9)
    legend_rows = math.ceil(len(handles) / 4)
    figure.tight_layout(rect=(0, 0.05 + 0.035 * legend_rows, 1, 1))
    return figure
