"""Which picture a table report shows: an ablation's line plot (the spec's `ablation`), else the verdict heat map
(hypvl.replication.plots); none where no cell has both the paper's number and ours, a note in the PNG's place."""

import pandas as pd

from hypvl.spec.expected import load_expected
from hypvl.replication.ablation_plot import draw_ablation
from hypvl.replication.plots import draw_verdicts, plt, save_png
from hypvl.spec.paper import PaperSpec

__all__ = ["note_figure", "save_png", "table_figure"]


def table_figure(spec: PaperSpec, table_name: str, frame: pd.DataFrame, labels: dict[str, str], title: str):
    """The figure of a standings frame (hypvl.replication.standing.standings) of a table, or None where there is
    nothing to draw: an ablation with no number of the paper's or ours, any other table with no cell holding both."""
    table = spec.table(table_name)
    if table.ablation is not None:
        if frame[["paper", "ours"]].notna().any(axis=None):
            return draw_ablation(frame, load_expected(table.expected_path), table.ablation, title)
        return None
    if frame["delta"].notna().any():
        return draw_verdicts(frame, labels, title)
    return None


def note_figure(text: str):
    """A small figure holding only `text`: what stands in the PNG of a table with nothing to draw."""
    figure = plt.figure(figsize=(6.0, 1.2))
    figure.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, wrap=True)
    return figure
