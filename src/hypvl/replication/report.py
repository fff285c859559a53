"""The markdown report of a compared table: ours beside the paper with verdict marks, the picture, the full paper, ours
and difference tables (collapsed), the row and column mapping with links to training curves, and provenance."""

import os
from pathlib import Path

import pandas as pd

from hypvl.errors import InputError
from hypvl.spec.expected import ExpectedTable, load_expected
from hypvl.outside.extras import EXTRA_ROW
from hypvl.io import atomic_write
from hypvl.replication.claims.render import table_claims_section
from hypvl.replication.compare import (
    FULL_SCALE,
    VERDICTS,
    frame_scale,
    joined,
    split_joined,
)
from hypvl.replication.coverage import REASONS
from hypvl.replication.markdown import code, escape
from hypvl.replication.markdown import table as markdown_table
from hypvl.replication.provenance_section import provenance_section
from hypvl.replication.report_cells import (
    MARKERS,
    compact_cell,
    compact_grid,
    decimals,
    delta_cell,
    grid,
    ours_cell,
    paper_cell,
    seeds_note,
)
from hypvl.replication.standing import standings
from hypvl.spec.paper import PaperSpec
from hypvl.spec.tables import External
from hypvl.spec.terms import Column, common_metric, term_label

SMOKE_BANNER = "SMOKE SCALE: synthetic world, tiny models; numbers are not comparable to the paper"
PILOT_BANNER = ("PILOT SCALE: the paper-scale path (full-size encoders, the acquired layouts) on a tiny world for a few "
                "steps; numbers are not comparable to the paper")
SUMMARY_PREFIX = "**Summary**"
LEGEND = {
    "within": "within tolerance",
    "outside": "outside tolerance: ▲ better than the paper, ▼ worse (by the metric's direction), ◆ a metric with no "
               "direction",
    "within_seed_spread": "outside tolerance but within the seed spread (|ours − paper| ≤ 2 standard deviations of "
                          "our seeds)",
    "not_comparable": "not comparable (not paper scale)",
    "no_paper_value": "no number printed in the paper",
    "missing": "no number of ours; the cell says why: " + ", ".join(REASONS),
    "external": "outside the suite (reason under Rows/Columns)",
    "extra": "an extra model's number (config `extra_models`), compared with none",
}
EXTRA_MARK = " (extra model)"


def banner(scale: str) -> str:
    """The one-line scale banner at the top of a report."""
    if scale == FULL_SCALE:
        return "**Paper scale**: real data, paper-scale models; verdicts compare ours with the paper's numbers."
    return f"**{PILOT_BANNER if scale == 'pilot' else SMOKE_BANNER}** (scale {code(scale)})."


def row_labels(expected: ExpectedTable) -> dict[str, str]:
    """Row slug -> its printed labels joined by spaces (the slug where a table prints no labels)."""
    return {row: " ".join(text for text in expected.labels[row].values() if text) or row for row in expected.rows}


def outside_mark(spec: PaperSpec, experiment, scale: str, also: str = "") -> str:
    """How a row says what it is beside its printed row (`also`: `released` for a printed row's released checkpoint,
    `reading <name>` for another reading of the row) and where its weights come from: `stand-in` where, at any
    scale but full, weights from outside are stood in for by a smoke-trained model written in their format
    (hypvl.outside.standins)."""
    outside = isinstance(experiment, str) and spec.experiments[experiment].source != "train"
    marks = ([also] if also else []) + (["stand-in"] if outside and scale != FULL_SCALE else [])
    return f" ({', '.join(marks)})" if marks else ""


def extra_rows(frame: pd.DataFrame) -> list[str]:
    """The rows of extra models in a compare frame (`extra__<name>`, after the printed ones)."""
    return [row for row in dict.fromkeys(frame["row"]) if row.startswith(EXTRA_ROW)]


def marked_rows(spec: PaperSpec, table_name: str, scale: str, extras=()) -> dict[str, tuple[str | None, str]]:
    """Compared row id (released checkpoints' and other readings' rows too) -> (the printed row it reports, its
    `outside_mark`); each row of `extras` -> (None, EXTRA_MARK)."""
    table = spec.table(table_name)
    marked = {row: (printed, outside_mark(spec, experiment, scale, table.beside(row)))
              for row, (printed, experiment) in table.compared_rows().items()}
    return {**marked, **{row: (None, EXTRA_MARK) for row in extras}}


def compared_labels(spec: PaperSpec, table_name: str, expected: ExpectedTable, scale: str, extras=()) -> dict[str, str]:
    """Compared row id -> its printed label with its mark (an extra model's: its name)."""
    printed = row_labels(expected)
    return {row: (printed[source] if source else row.removeprefix(EXTRA_ROW)) + mark
            for row, (source, mark) in marked_rows(spec, table_name, scale, extras).items()}


def verdict_counts(frame: pd.DataFrame) -> str:
    """`N cells: counts per verdict`, the missing ones by reason, e.g. `4 cells: 2 within, 2 missing (2 not built)`."""
    counts = frame["verdict"].value_counts()
    reasons = frame.loc[frame["verdict"] == "missing", "reason"].value_counts()
    why = ", ".join(f"{int(reasons[reason])} {reason}" for reason in REASONS if reason in reasons)
    parts = [f"{int(counts[verdict])} {verdict.replace('_', ' ')}" + (f" ({why})" if verdict == "missing" else "")
             for verdict in VERDICTS if verdict in counts]
    return f"{len(frame)} cells: {', '.join(parts)}"


def summary_line(frame: pd.DataFrame) -> str:
    """`**Summary** (scale): N cells: counts per verdict`, the line the index copies."""
    return f"{SUMMARY_PREFIX} ({frame_scale(frame)} scale): {verdict_counts(frame)}."


def _tolerance_text(spec: PaperSpec, table_name: str) -> str:
    """The table tolerance and any per-column overrides."""
    table = spec.table(table_name)
    overrides = [
        f"`{column}` ±{mapped.tolerance:g}"
        for column, mapped in table.columns.items()
        if isinstance(mapped, Column) and mapped.tolerance is not None
    ]
    text = f"**Tolerance**: ±{table.tolerance:g} absolute, in the paper's printed units"
    return text + (f"; per column: {', '.join(overrides)}." if overrides else ".")


def _hashes(frame: pd.DataFrame, row: str) -> str:
    """The config hashes of a row's metric JSONs, as code in a table cell."""
    return " ".join(code(value, cell=True) for value in split_joined(frame.loc[frame["row"] == row, "config_hash"]))


def _mapping_sections(spec: PaperSpec, table_name: str, frame: pd.DataFrame, labels: dict[str, str],
                      curves: dict[str, str]) -> list[str]:
    """The Rows section (experiment or external reason, config hashes, note, a link to its training curves) and
    Columns (task, metric, tolerance); `labels`: compared row id -> label; `curves`: experiment -> link."""
    table = spec.table(table_name)
    lines = ["## Rows", ""]
    body = []
    for row, (printed, target) in table.compared_rows().items():
        hashes = _hashes(frame, row)
        if isinstance(target, External):
            body.append([f"`{row}`", escape(labels[row]), f"external: {escape(target.reason)}", "–", "", ""])
        else:
            note = escape(spec.experiments[target].note)
            renames = table.row_tasks.get(printed, {})
            scored = "".join(f", `{task}` read as `{other}`" for task, other in renames.items())
            curve = f"[curves]({curves[target]})" if target in curves else ""
            body.append([f"`{row}`", escape(labels[row]), f"`{target}`{scored}", hashes or "–", curve, note])
    for row in extra_rows(frame):
        experiment = joined(frame.loc[frame["row"] == row, "experiment"])
        hashes = _hashes(frame, row)
        body.append([code(row, cell=True), escape(labels[row]), code(experiment, cell=True), hashes or "–", "",
                     "extra model"])
    lines += markdown_table(["row", "printed", "experiment", "config hashes", "training", "note"], body)
    lines += ["", "## Columns", ""]
    body = []
    for column, mapped in table.columns.items():
        if isinstance(mapped, External):
            body.append([f"`{column}`", f"external: {escape(mapped.reason)}", "–", "–"])
        else:
            metric = f"`{mapped.metric}`" if mapped.metric else "per task"
            tasks = f"`{mapped.task_label}`"
            if mapped.readings:  # every reading the spec declares, the compared one first
                others = [f"{escape(name)}: `{term_label(term, common_metric(term) or None)}`"
                          for name, term in mapped.readings.items() if name != mapped.reading]
                tasks = f"reading {escape(mapped.reading)}: {tasks} (other readings: {'; '.join(others)})"
            if mapped.experiment:
                tasks += f" of `{mapped.experiment}` in every row"
            body.append([f"`{column}`", tasks, metric, f"±{table.tolerance_for(column):g}"])
    lines += markdown_table(["column", "task", "metric", "tolerance"], body)
    return lines


def _check_frame(frame: pd.DataFrame, spec: PaperSpec, table_name: str, source) -> None:
    """Raise InputError naming `source` unless the compare frame covers exactly the spec's cells."""
    table = spec.table(table_name)
    wanted = [(row, column) for row in [*table.compared_rows(), *extra_rows(frame)] for column in table.columns]
    have = list(zip(frame["row"], frame["column"]))
    if have != wanted:
        raise InputError(f"{source}: cells do not match {spec.path} table {table_name!r}; rerun compare")


def _details(summary: str, lines: list[str]) -> list[str]:
    """`lines` under `## summary` in a collapsed <details> section."""
    return [f"<details><summary>{summary}</summary>", "", f"## {summary}", "", *lines, "", "</details>", ""]


def report_markdown(spec: PaperSpec, table_name: str, frame: pd.DataFrame, plot_link: str | None,
                    curves: dict[str, str] | None = None) -> str:
    """The markdown of one table report: plot_link is the PNG's path relative to the report (None: the table has
    nothing to draw, a note says so); `curves`: experiment -> its training curves' path relative to the report."""
    table = spec.table(table_name)
    expected = load_expected(table.expected_path)
    compared = marked_rows(spec, table_name, frame_scale(frame), extra_rows(frame))
    labels = compared_labels(spec, table_name, expected, frame_scale(frame), extra_rows(frame))
    places = decimals(expected)
    lines_by_cell = {(line.row, line.column): line for line in standings(frame, spec, table_name).itertuples(index=False)}

    def cell(render):
        return lambda row, column: render(lines_by_cell[(row, column)], places[column])

    legend = "; ".join(f"{escape(MARKERS[verdict])} {LEGEND[verdict]}" for verdict in VERDICTS)
    picture = (f"![the verdicts: each cell's difference in tolerances of its column]({plot_link})" if plot_link else
               "*No plot: no cell has both the paper's number and ours.*")
    lines = [
        f"# {escape(spec.paper)} {escape(table_name)}: {escape(table.title)}",
        "",
        f"> {banner(frame_scale(frame))}",
        "",
        f"Paper: *{escape(spec.title)}*. Printed numbers: {code(f'expected/{spec.paper}/{table.expected_path.name}')}; "
        f"mapping: {code(f'replication/{spec.path.name}')}.",
        "",
        _tolerance_text(spec, table_name),
        "",
        summary_line(frame),
        "",
        picture,
        "",
        "## Ours beside the paper",
        "",
        *compact_grid(expected, labels, cell(compact_cell)),
        *seeds_note(frame),
        "",
        f"Each cell: our number and its mark, the paper's number under it. Marks: {legend}.",
        "",
        *table_claims_section(spec, table_name, frame, frame_scale(frame)),
        *_details("Paper (as printed)", grid(expected, lambda row, column: paper_cell(expected, row, column))),
        *_details("Ours", grid(expected, cell(ours_cell), compared)),
        *_details("Difference (ours − paper) and verdict", grid(expected, cell(delta_cell), compared)),
        *_mapping_sections(spec, table_name, frame, labels, curves or {}),
        "",
        *provenance_section(frame),
        "",
    ]
    return "\n".join(lines)


def write_report(spec: PaperSpec, table_name: str, frame: pd.DataFrame, out, also=(), source="compare table",
                 curves=None) -> None:
    """Write the report to `out` (and each path in `also`), its picture beside `out` as a PNG (a note where there is
    nothing to draw) and `out` as a self-contained HTML page beside it, atomically. `curves`: experiment -> the PNG
    of its training curves, linked from the rows it trained."""
    from hypvl.replication.figures import note_figure, save_png, table_figure  # matplotlib: only where it draws
    from hypvl.replication.html import write_html

    _check_frame(frame, spec, table_name, source)
    out = Path(out)
    plot_path = out.with_suffix(".png")
    table = spec.table(table_name)
    labels = compared_labels(spec, table_name, load_expected(table.expected_path), frame_scale(frame),
                             extra_rows(frame))
    title = f"{spec.paper} {table_name}: {table.title} — {frame_scale(frame)} scale"
    figure = table_figure(spec, table_name, standings(frame, spec, table_name), labels, title)
    save_png(figure or note_figure(f"{title}\nno cell has both the paper's number and ours"), plot_path)

    def relative(target, path):
        return Path(os.path.relpath(Path(target).resolve(), path.resolve().parent)).as_posix()

    for path in [out, *map(Path, also)]:
        links = {experiment: relative(png, path) for experiment, png in (curves or {}).items()}
        with atomic_write(path, mode="w", encoding="utf-8") as handle:
            handle.write(report_markdown(spec, table_name, frame, relative(plot_path, path) if figure else None,
                                         links))
    write_html(out, out.with_suffix(".html"), images=[plot_path])  # the one picture a page embeds: its own
