"""Pictures of a compared table: paper vs ours per cell, and the difference as a heat map."""

import math

from hypvl.errors import require

require("matplotlib", "report").use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from hypvl.io import atomic_write  # noqa: E402

_VERDICT_STYLE = {  # verdict -> (marker, colour, legend) in the scatter
    "within": ("o", "tab:green", "within tolerance"),
    "outside": ("X", "tab:red", "outside tolerance"),
    "within_seed_spread": ("D", "tab:orange", "outside tolerance, within the seed spread"),
    "not_comparable": ("o", "0.45", "not comparable (not paper scale)"),
}


def _scatter(axis, frame: pd.DataFrame, tolerance: float) -> None:
    """Paper (x) vs ours (y), one point per cell with both numbers, coloured by verdict, with y = x ± tolerance."""
    both = frame[frame["paper"].notna() & frame["ours"].notna()]
    if both.empty:
        axis.text(0.5, 0.5, "no cell has both a paper\nand a measured number", ha="center", va="center",
                  transform=axis.transAxes)
        axis.set_axis_off()
        return
    for verdict, (marker, colour, label) in _VERDICT_STYLE.items():
        chosen = both[both["verdict"] == verdict]
        if not chosen.empty:
            axis.scatter(chosen["paper"], chosen["ours"], s=24, marker=marker, color=colour, alpha=0.8, zorder=3,
                         label=f"{label} ({len(chosen)})")
    low = float(min(both["paper"].min(), both["ours"].min()))
    high = float(max(both["paper"].max(), both["ours"].max()))
    margin = 0.05 * (high - low) or 1.0
    line = np.array([low - margin, high + margin])
    axis.plot(line, line, color="black", linewidth=0.8, zorder=2, label="ours = paper")
    axis.fill_between(line, line - tolerance, line + tolerance, color="0.85", zorder=1,
                      label=f"± {tolerance:g} (table tolerance)")
    axis.set_xlim(*line)
    axis.set_ylim(*line)
    axis.set_aspect("equal")
    axis.set_xlabel("paper (as printed)")
    axis.set_ylabel("ours")
    axis.legend(fontsize=7, loc="upper left")


def _heatmap(axis, frame: pd.DataFrame, row_labels: dict[str, str]) -> None:
    """Delta = ours - paper as a rows x columns heat map (grey where there is no delta), annotated."""
    rows = list(dict.fromkeys(frame["row"]))
    columns = list(dict.fromkeys(frame["column"]))
    delta = frame.pivot(index="row", columns="column", values="delta").loc[rows, columns].to_numpy(dtype=float)
    finite = delta[np.isfinite(delta)]
    bound = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
    cmap = plt.get_cmap("RdBu").with_extremes(bad="0.85")
    image = axis.imshow(np.ma.masked_invalid(delta), cmap=cmap, vmin=-bound, vmax=bound, aspect="auto")
    size = max(4.0, min(8.0, 120.0 / max(len(columns), 1)))
    for (i, j), value in np.ndenumerate(delta):
        if math.isfinite(value):
            axis.text(j, i, f"{value:+.1f}", ha="center", va="center", fontsize=size,
                      color="white" if abs(value) > 0.6 * bound else "black")
    axis.set_xticks(range(len(columns)), columns, rotation=60, ha="right", fontsize=7)
    axis.set_yticks(range(len(rows)), [row_labels[row] for row in rows], fontsize=7)
    axis.set_title("ours − paper (grey: no number on one side)", fontsize=9)
    axis.figure.colorbar(image, ax=axis, shrink=0.8, label="ours − paper")


def plot_table(frame: pd.DataFrame, row_labels: dict[str, str], title: str, tolerance: float, path) -> None:
    """Save a PNG at `path`: scatter of paper vs ours (left) and the delta heat map (right).

    frame: a compare frame (one line per cell); row_labels: row slug -> printed label.
    """
    n_rows = frame["row"].nunique()
    n_columns = frame["column"].nunique()
    width = 6.0 + max(4.0, 0.45 * n_columns)
    height = max(4.5, 0.35 * n_rows + 2.0)
    figure, (left, right) = plt.subplots(1, 2, figsize=(width, height),
                                         gridspec_kw={"width_ratios": [5.0, max(4.0, 0.45 * n_columns)]})
    try:
        _scatter(left, frame, tolerance)
        _heatmap(right, frame, row_labels)
        figure.suptitle(title, fontsize=10)
        figure.tight_layout()
        with atomic_write(path, mode="wb") as handle:
            figure.savefig(handle, format="png", dpi=110, bbox_inches="tight")
    finally:
        plt.close(figure)
