"""Training curves of one model from its `train_log.csv` (a row per step): the loss and its terms, PoinCLIP's pair
order (apex rate, agreement with the radius order), the learning rate and each learned scalar the log records
(curvature, temperature), one panel each; whatever columns the trainer writes, an empty column (a term the method
does not have) drawn nowhere."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from hypvl.errors import InputError  # noqa: E402

SCALARS = ("lr", "curvature", "temperature")  # one panel each
RATES = ("apex_rate", "apex_radius_agreement")  # fractions of a batch's pairs: one panel, from 0 to 1
# every other column but `step` is a loss term
_SMOOTH = 0.05  # the running mean's window, as a fraction of the steps (a raw step loss is noisy)


def read_log(path) -> pd.DataFrame:
    """A train log as numbers, its empty columns dropped; InputError names the file when it is no such log."""
    try:
        log = pd.read_csv(path)
    except (FileNotFoundError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"{path}: not a training log ({error})") from None
    if "step" not in log.columns or log.empty:
        raise InputError(f"{path}: not a training log (no `step` column, or no rows)")
    numbers = log.apply(pd.to_numeric, errors="coerce")
    bad = [name for name in log.columns if numbers[name].isna().sum() > log[name].isna().sum()]
    if bad:
        raise InputError(f"{path}: column {bad[0]!r} holds something other than numbers")
    return numbers.dropna(axis=1, how="all")


def draw_curves(log: pd.DataFrame, title: str):
    """The figure of a train log (`read_log`): the loss terms in one panel and the pair order's rates in another
    (raw, faint, and a running mean), each scalar in its own. Returns the matplotlib Figure."""
    terms = [name for name in log.columns if name != "step" and name not in SCALARS + RATES]
    rates = [name for name in RATES if name in log.columns]
    panels = [(heading, names) for heading, names in (("loss terms", terms), ("apex order", rates)) if names]
    panels += [(name, [name]) for name in SCALARS if name in log.columns]
    figure, axes = plt.subplots(1, len(panels), squeeze=False, figsize=(4.0 * len(panels), 3.2))
    window = max(1, math.ceil(_SMOOTH * len(log)))
    for axis, (heading, names) in zip(axes[0], panels):
        smoothed = names[0] not in SCALARS
        for index, name in enumerate(names):
            colour = f"C{index}"
            if not smoothed:
                axis.plot(log["step"], log[name], color=colour, linewidth=1.2)
                continue
            axis.plot(log["step"], log[name], color=colour, alpha=0.25, linewidth=0.8)
            axis.plot(log["step"], log[name].rolling(window, min_periods=1).mean(), color=colour, linewidth=1.4,
                      label=name)
        axis.set_title(heading + (f" (running mean of {window} steps)" if smoothed and window > 1 else ""),
                       fontsize=9)
        if smoothed:
            axis.legend(fontsize=7)
        if names is rates:
            axis.set_ylim(-0.05, 1.05)
        axis.set_xlabel("step", fontsize=8)
        axis.tick_params(labelsize=7)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure
