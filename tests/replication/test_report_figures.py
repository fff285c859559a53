"""The pictures of the reports, on the papers' own printed tables: the verdict heat map colours each cell by its
difference in tolerances of its own column, signed by the metric's direction; an ablation is a line over the setting
it varies; a table with nothing to compare has no plot; training curves draw whichever known columns a log has; a
table's page fits a screen of 1,400 pixels in headless Chromium."""

import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgb

from helpers import REPO
from helpers.browser import browse, needs_chromium
from hypvl.errors import InputError
from hypvl.spec.expected import load_expected
from hypvl.replication import plots
from hypvl.replication.compare import compare_table
from hypvl.replication.curves import draw_curves, read_log
from hypvl.replication.figures import table_figure
from hypvl.replication.report import compared_labels, write_report
from hypvl.replication.standing import standings
from hypvl.spec.load import load_spec


def spec_of(paper: str):
    return load_spec(REPO / "replication" / f"{paper}.yaml", REPO / "expected")


def moved(paper: str, table: str, scale: str, shift) -> pd.DataFrame:
    """The compare frame of a printed table whose every cell with a paper number reads ours = paper + shift(line)
    tolerances of its column (no metric JSONs: the verdicts as compare gives them at `scale`)."""
    frame = compare_table(spec_of(paper), table, REPO / "no_metrics", scale)
    has = frame["paper"].notna() & (frame["verdict"] != "external")
    steps = np.array([shift(line) for line in frame[has].itertuples(index=False)], dtype=float)
    frame.loc[has, "ours"] = frame.loc[has, "paper"] + steps * frame.loc[has, "tolerance"]
    frame.loc[has, "delta"] = frame.loc[has, "ours"] - frame.loc[has, "paper"]
    frame.loc[has, "verdict"] = (np.where(np.abs(steps) <= 1, "within", "outside") if scale == "full"
                                 else "not_comparable")
    frame.loc[has, ["n_seeds", "reason"]] = [1, ""]
    return frame


def drawn_cells(figure) -> dict[tuple[str, str], tuple]:
    """(row label, column) -> the RGB a verdict heat map paints that cell."""
    cells = {}
    for axis in figure.axes:
        image = axis.get_images()[0].get_array()
        columns = [label.get_text() for label in axis.get_xticklabels()]
        rows = [label.get_text() for label in figure.axes[0].get_yticklabels()]
        for (i, j), colour in np.ndenumerate(image[:, :, 0]):
            cells[(rows[i], columns[j])] = tuple(np.round(image[i, j], 6))
    return cells


def verdict_figure(paper: str, table: str, frame: pd.DataFrame):
    spec = spec_of(paper)
    labels = compared_labels(spec, table, load_expected(spec.table(table).expected_path), frame["scale"].iloc[0])
    return table_figure(spec, table, standings(frame, spec, table), labels, "test")


def colour(name: str) -> tuple:
    return tuple(np.round(to_rgb(name), 6))


def test_half_a_tolerance_is_drawn_within_whatever_the_unit():
    """HyCoCLIP Table 2 mixes recalls (%), TIE/LCA (edges, lower is better) and fractions: each cell half its own
    column's tolerance off is green, each unit in its own panel."""
    frame = moved("hycoclip", "table2", "full", lambda line: 0.5)
    figure = verdict_figure("hycoclip", "table2", frame)
    assert [axis.get_title().split("\n")[0] for axis in figure.axes] == ["%", "edges", "fraction"]
    cells = drawn_cells(figure)
    assert len(cells) == frame["delta"].notna().sum() > 100
    assert set(cells.values()) == {colour(plots.WITHIN)}
    plt.close(figure)


def test_a_lower_is_better_cell_that_went_down_is_drawn_improved():
    """TIE is lower-is-better: three tolerances below the paper is better (blue); a recall three tolerances below is
    worse (red); the rest stay within."""
    def shift(line):
        return -3.0 if line.row == "vits_hycoclip" and line.column in ("tie", "coco_t2i_r5") else 0.2

    frame = moved("hycoclip", "table2", "full", shift)
    figure = verdict_figure("hycoclip", "table2", frame)
    cells = drawn_cells(figure)
    label = next(row for row in cells if row[0].startswith("ViT S/16 HyCoCLIP") and "released" not in row[0])[0]
    assert cells[(label, "tie")] == colour(plots.BETTER[1])  # 2-3 tolerances better
    assert cells[(label, "coco_t2i_r5")] == colour(plots.WORSE[1])
    assert sum(value != colour(plots.WITHIN) for value in cells.values()) == 2
    signed = standings(frame, spec_of("hycoclip"), "table2").set_index(["row", "column"])
    assert signed.loc[("vits_hycoclip", "tie"), "signed"] == pytest.approx(3.0)
    assert signed.loc[("vits_hycoclip", "tie"), "standing"] == "better"
    plt.close(figure)


def test_not_comparable_cells_carry_no_colour(tmp_path):
    """At smoke scale every cell is not comparable: grey, however far off, and no verdict mark in the report."""
    frame = moved("hycoclip", "table2", "smoke", lambda line: -7.0 if line.column == "tie" else 9.0)
    figure = verdict_figure("hycoclip", "table2", frame)
    assert set(drawn_cells(figure).values()) == {colour(plots.NOT_COMPARABLE)}
    plt.close(figure)
    out = tmp_path / "table2.md"
    write_report(spec_of("hycoclip"), "table2", frame, out)
    compact = out.read_text().split("## Ours beside the paper")[1].split("<details>")[0]
    assert not any(mark in compact.split("Each cell:")[0] for mark in "●▲▼◆◐")


def test_an_ablation_spec_draws_a_line_over_its_setting():
    """HyCoCLIP Table 6 varies the batch size: the paper's six numbers and ours as lines over the six settings, in
    printed order, ours with the seeds' error bars."""
    frame = moved("hycoclip", "table6", "full", lambda line: 0.4)
    frame["n_seeds"], frame["spread"] = 3, 0.2
    figure = verdict_figure("hycoclip", "table6", frame)
    axis = figure.axes[0]
    assert [label.get_text() for label in axis.get_xticklabels()] == ["512", "640", "768", "896", "1024", "1536"]
    paper = next(line for line in axis.get_lines() if line.get_label() == "paper")
    assert paper.get_linestyle() == "-" and list(paper.get_xdata()) == list(range(6))
    assert list(paper.get_ydata()) == [11.1, 11.3, 12.2, 12.2, 12.1, 12.1]
    assert axis.containers, "ours is drawn with error bars"
    marks = [line for line in axis.get_lines() if len(line.get_xdata()) == 1]  # ours, each in its verdict's colour
    on_top = max(line.get_zorder() for line in axis.get_lines() if line not in marks)
    assert len(marks) == 6 and all(line.get_zorder() > on_top for line in marks)
    assert {line.get_markerfacecolor() for line in marks} == {plots.WITHIN}
    plt.close(figure)


def test_an_ablation_keys_its_verdict_colours_and_never_gives_ours_an_axis_of_its_own():
    """At paper scale the figure's legend keys our markers' verdict colours (within, and worse by over 3 tolerances
    here); at smoke scale paper and ours share each panel's one axis (no twin scaled apart: a plateau stays flat),
    which spans both, and the title says ours is not comparable."""
    frame = moved("hycoclip", "table6", "full", lambda line: -4.0 if line.row.endswith("1536") else 0.4)
    figure = verdict_figure("hycoclip", "table6", frame)
    keys = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
    assert "ours: within tolerance (|difference| ≤ 1)" in keys and "ours: worse by > 3 tolerances" in keys
    assert "ours: better by 1–2 tolerances" not in keys  # only the colours drawn
    plt.close(figure)
    frame = moved("hycoclip", "table6", "smoke", lambda line: -30.0)  # ours far below the paper
    figure = verdict_figure("hycoclip", "table6", frame)
    places = [tuple(np.round(axis.get_position().bounds, 6)) for axis in figure.axes]
    assert len(set(places)) == len(places)  # no twin axis over a panel
    axis = figure.axes[0]
    paper = next(line for line in axis.get_lines() if line.get_label() == "paper").get_ydata()
    ours = axis.containers[0].lines[0].get_ydata()  # drawn with the seeds' error bars
    low, high = axis.get_ylim()
    assert low <= min(ours) and max(ours) < min(paper) and max(paper) <= high  # both levels, as they are
    assert "not comparable" in figure._suptitle.get_text()
    plt.close(figure)


def with_extra_row(frame: pd.DataFrame, ours: float) -> pd.DataFrame:
    """The frame with an extra model's row (`extra__mine`) as compare writes one: every column measured, no paper."""
    first = frame[frame["row"] == frame["row"].iloc[0]].copy()
    first["row"], first["experiment"], first["verdict"] = "extra__mine", "extra_mine", "extra"
    first["ours"], first["paper"], first["paper_text"], first["delta"] = ours, np.nan, "", np.nan
    return pd.concat([frame, first], ignore_index=True)


def test_an_extra_model_is_drawn_as_a_row_of_its_own_with_its_numbers(tmp_path):
    """An extra model's row (config `extra_models`): its own colour, keyed in the legend, each cell its number written
    in (not the white of a missing cell); in the compact table its numbers with no paper line under them."""
    spec = spec_of("hycoclip")
    frame = with_extra_row(moved("hycoclip", "table1", "full", lambda line: 0.5), 12.34)
    labels = compared_labels(spec, "table1", load_expected(spec.table("table1").expected_path), "full",
                             ["extra__mine"])
    figure = table_figure(spec, "table1", standings(frame, spec, "table1"), labels, "test")
    extra = {colour for (row, _), colour in drawn_cells(figure).items() if row.startswith("mine")}
    assert extra == {colour(plots.EXTRA)} and colour(plots.EXTRA) != colour(plots.NO_DIFFERENCE)
    assert [t.get_text() for t in figure.axes[0].texts].count("12.3") == 16
    assert "extra model: its own number, compared with none" in [t.get_text() for t in figure.legends[0].get_texts()]
    plt.close(figure)
    out = tmp_path / "table1.md"
    write_report(spec, "table1", frame, out)
    [line] = [line for line in out.read_text().splitlines() if line.startswith("| mine (extra model)")]
    assert line.count("12.34 –") == 16 and "<sub>" not in line


def test_a_table_with_nothing_to_compare_gets_a_note_not_a_plot(tmp_path):
    """HierarCaps Table 2 (parameter counts) is all external."""
    spec = spec_of("hierarcaps")
    frame = compare_table(spec, "table2", REPO / "no_metrics", "smoke")
    assert set(frame["verdict"]) == {"external"}
    out = tmp_path / "table2.md"
    write_report(spec, "table2", frame, out)
    markdown = out.read_text()
    assert "*No plot: no cell has both the paper's number and ours.*" in markdown and "](table2.png)" not in markdown


def test_training_curves_draw_the_columns_a_log_has(tmp_path):
    """A log still streaming (a subset of the columns, an empty term) draws the loss terms it holds and each scalar;
    something that is no log is one clear error."""
    log = tmp_path / "train_log.csv"
    log.write_text("step,loss,contrastive,entailment,lr,curvature\n" +
                   "".join(f"{step},{5 - step * 0.1},{4 - step * 0.1},,{1e-4 * step},{1 - step * 0.01}\n"
                           for step in range(30)))
    figure = draw_curves(read_log(log), "test")
    assert [axis.get_title().split(" (")[0] for axis in figure.axes] == ["loss terms", "lr", "curvature"]
    assert {line.get_label() for line in figure.axes[0].get_lines()} >= {"loss", "contrastive"}
    assert "entailment" not in {line.get_label() for line in figure.axes[0].get_lines()}
    plt.close(figure)
    (tmp_path / "bad.csv").write_text("step,loss\n1,abc\n")
    with pytest.raises(InputError, match="bad.csv: column 'loss' holds something other than numbers"):
        read_log(tmp_path / "bad.csv")


def test_training_curves_draw_poinclips_apex_order_apart_from_the_loss_terms(tmp_path):
    """The apex rate and radius agreement (fractions, not losses) share a panel of their own, from 0 to 1."""
    log = tmp_path / "train_log.csv"
    log.write_text("step,loss,entailment,lr,apex_rate,apex_radius_agreement\n" +
                   "".join(f"{step},{5 - step * 0.1},{1 - step * 0.01},1e-4,{step % 2},0.75\n" for step in range(30)))
    figure = draw_curves(read_log(log), "test")
    assert [axis.get_title().split(" (")[0] for axis in figure.axes] == ["loss terms", "apex order", "lr"]
    assert {line.get_label() for line in figure.axes[0].get_lines()} >= {"loss", "entailment"}
    assert not {"apex_rate", "apex_radius_agreement"} & {line.get_label() for line in figure.axes[0].get_lines()}
    assert {"apex_rate", "apex_radius_agreement"} <= {line.get_label() for line in figure.axes[1].get_lines()}
    assert figure.axes[1].get_ylim() == (-0.05, 1.05)
    plt.close(figure)


# run in the page: the right edge of the table under "Ours beside the paper", written where --dump-dom shows it
MEASURE = ("<script>const h = [...document.querySelectorAll('h2')].find(e => e.textContent === 'Ours beside the "
           "paper'); const t = h.nextElementSibling.querySelector('table'); document.body.dataset.right = "
           "Math.ceil(t.getBoundingClientRect().right);</script>")


@needs_chromium
@pytest.mark.parametrize("scale", ["full", "smoke"])
def test_the_compact_table_of_sixteen_columns_fits_1400_pixels(tmp_path, scale):
    """HyCoCLIP Table 1 (16 columns, 19 rows: the widest the papers print side by side): the table under "Ours beside
    the paper" ends inside the window, its row labels wrapping, its cells numbers and marks without words."""
    frame = moved("hycoclip", "table1", scale, lambda line: 0.5)
    out = tmp_path / "table1.md"
    write_report(spec_of("hycoclip"), "table1", frame, out)
    cells = out.read_text().split("## Ours beside the paper")[1].split("Each cell:")[0]
    assert "paper" not in cells.split("\n", 3)[3]  # the body: numbers and marks only
    page = tmp_path / "measured.html"
    page.write_text(out.with_suffix(".html").read_text().replace("</body>", MEASURE + "</body>"))
    dom = browse([page], tmp_path / "chromium", width=1400)[page]
    right = re.search(r'data-right="(\d+)"', dom)
    assert right, "the page was not measured"
    assert int(right[1]) <= 1400, f"the compact table ends at {right[1]} px"
