"""The verdict picture of a compared table: each cell's difference from the paper in tolerances of its own column,
signed so that positive is better (hypvl.replication.standing), one heat map per unit the table prints.

Colours carry the verdict: green within tolerance, yellow within the seed spread, blues better and reds worse than
the paper (deeper by each further tolerance), grey not comparable (no colour: not paper scale), sand an extra model's
row (its own number written in), white where there is no difference (missing, external, no paper number). PNGs are saved without the matplotlib version, so a plot is
the same bytes wherever the same numbers are drawn.
"""

from hypvl.errors import require

require("matplotlib", "report").use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from hypvl.io import atomic_write  # noqa: E402

WITHIN = "#a6dba0"
SEED_SPREAD = "#fee08b"
BETTER = ("#92c5de", "#4393c3", "#2166ac")  # by 1-2, 2-3 and over 3 tolerances
WORSE = ("#f4a582", "#d6604d", "#b2182b")
OFF = "#c2a5cf"  # outside tolerance, a metric with no direction
NOT_COMPARABLE = "#d9d9d9"
EXTRA = "#e6dcc8"  # an extra model's row (config `extra_models`): its own number, compared with none
NO_DIFFERENCE = "#ffffff"
_TEXT = {"missing": "?", "external": "ext", "no_paper_value": "n/p"}


def cell_colour(standing: str, signed: float) -> str:
    """The colour of a cell with `standing` and signed difference `signed` (in tolerances)."""
    if standing in ("better", "worse"):
        depth = min(int(np.ceil(abs(signed))) - 2, 2) if abs(signed) > 1 else 0
        return (BETTER if standing == "better" else WORSE)[max(depth, 0)]
    return {"within": WITHIN, "within_seed_spread": SEED_SPREAD, "off": OFF, "not_comparable": NOT_COMPARABLE,
            "extra": EXTRA}.get(standing, NO_DIFFERENCE)


def _cell_text(line) -> tuple[str, str]:
    """(text, its colour) written in a cell: the signed difference in tolerances (± the seeds' spread), grey where
    not comparable; an extra model's own number; a marker where there is no difference."""
    if line.standing == "extra":
        return f"{line.ours:.3g}", "black"
    if pd.isna(line.signed):
        return _TEXT.get(line.verdict, ""), "0.35"
    text = f"{line.signed:+.1f}" + (f"\n±{line.signed_spread:.1f}" if pd.notna(line.signed_spread) else "")
    dark = line.standing in ("better", "worse") and abs(line.signed) > 2
    return text, "0.45" if line.standing == "not_comparable" else ("white" if dark else "black")


def _facets(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Unit -> its value columns, in printed order (external columns, with no unit, under "")."""
    facets: dict[str, list[str]] = {}
    for column, unit in dict(zip(frame["column"], frame["unit"])).items():
        facets.setdefault(unit, []).append(column)
    return facets


def _facet_title(frame: pd.DataFrame, unit: str, columns: list[str]) -> str:
    """`unit (tolerance ±t)`, every distinct tolerance of its columns."""
    tolerances = sorted(set(frame.loc[frame["column"].isin(columns), "tolerance"]))
    return f"{unit or 'external'}\n(tolerance {', '.join(f'±{t:g}' for t in tolerances)})"


def _heatmap(axis, frame: pd.DataFrame, rows: list[str], columns: list[str]) -> None:
    """Rows x columns of one facet, coloured by standing and annotated."""
    cells = {(line.row, line.column): line for line in frame.itertuples(index=False)}
    colours = np.array([[to_rgb(cell_colour(cells[(row, column)].standing, cells[(row, column)].signed))
                         for column in columns] for row in rows])
    axis.imshow(colours, aspect="auto", interpolation="nearest")
    size = 7 if len(columns) < 12 else 6
    for i, row in enumerate(rows):
        for j, column in enumerate(columns):
            text, colour = _cell_text(cells[(row, column)])
            axis.text(j, i, text, ha="center", va="center", fontsize=size, color=colour)
    axis.set_xticks(range(len(columns)), columns, rotation=60, ha="right", fontsize=7)
    axis.set_xticks(np.arange(len(columns) + 1) - 0.5, minor=True)
    axis.set_yticks(np.arange(len(rows) + 1) - 0.5, minor=True)
    axis.grid(which="minor", color="white", linewidth=1.5)
    axis.tick_params(which="minor", length=0)


def legend_patches(frame: pd.DataFrame) -> list[Patch]:
    """The legend entries of the verdict colours a standings frame uses."""
    used = {cell_colour(standing, signed) for standing, signed in zip(frame["standing"], frame["signed"])}
    entries = [(WITHIN, "within tolerance (|difference| ≤ 1)"), (SEED_SPREAD, "outside, within the seed spread"),
               *((colour, f"better by {label} tolerances") for colour, label in zip(BETTER, ("1–2", "2–3", "> 3"))),
               *((colour, f"worse by {label} tolerances") for colour, label in zip(WORSE, ("1–2", "2–3", "> 3"))),
               (OFF, "outside (no direction)"), (NOT_COMPARABLE, "not comparable (not paper scale)"),
               (EXTRA, "extra model: its own number, compared with none"),
               (NO_DIFFERENCE, "? missing, ext external, n/p no paper number")]
    return [Patch(facecolor=colour, edgecolor="0.6", label=label) for colour, label in entries if colour in used]


def draw_verdicts(frame: pd.DataFrame, row_labels: dict[str, str], title: str):
    """The verdict figure of a standings frame (hypvl.replication.standing.standings): one heat map per unit,
    rows x columns; row_labels: compared row id -> its printed label. Returns the matplotlib Figure."""
    rows = list(dict.fromkeys(frame["row"]))
    facets = _facets(frame)
    widths = [max(len(columns), 1.5) for columns in facets.values()]
    figure, axes = plt.subplots(1, len(facets), squeeze=False, sharey=True, width_ratios=widths,
                                figsize=(3.0 + 0.62 * sum(widths), 2.4 + 0.3 * len(rows)))
    for axis, (unit, columns) in zip(axes[0], facets.items()):
        _heatmap(axis, frame, rows, columns)
        axis.set_title(_facet_title(frame, unit, columns), fontsize=8)
    axes[0][0].set_yticks(range(len(rows)), [row_labels[row] for row in rows], fontsize=7)
    figure.suptitle(f"{title}\neach cell: (ours − paper) in tolerances of its column, + better than the paper",
                    fontsize=9)
    patches = legend_patches(frame)
    figure.legend(handles=patches, loc="lower center", ncol=3, fontsize=7, frameon=False, bbox_to_anchor=(0.5, 0.0))
    legend_inches = 0.15 + 0.2 * -(-len(patches) // 3)
    figure.tight_layout(rect=(0, legend_inches / figure.get_figheight(), 1, 1))
    return figure


def save_png(figure, path) -> None:
    """Save `figure` at `path` atomically, without the matplotlib version (the same bytes for the same picture), and
    close it."""
    try:
        with atomic_write(path, mode="wb") as handle:
            figure.savefig(handle, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    finally:
        plt.close(figure)
