"""`hypvl coverage`: every printed cell of every table, computed, external or missing and why (reports/coverage.md).

Cells are judged as the table reports judge them (`hypvl.replication.compare` on the metric JSONs present), each
missing one with the plan's reason (`hypvl.workflow.reports.ReportStage.blockers`, REASONS), so a cell
turns computed as soon as the plan makes it and its jobs run, with no change here. Torch-free: it reads the config,
the specs and the metric JSONs.
"""

import json
import os
import sys
from pathlib import Path

from hypvl.config import add_config_arguments, config_from_args
from hypvl.errors import InputError
from hypvl.outside.extras import entry_problem
from hypvl.replication.coverage import REASONS
from hypvl.replication.markdown import escape
from hypvl.replication.markdown import table as markdown_table
from hypvl.spec.tables import External
from hypvl.workflow import Plan
from hypvl.workflow.reports import FLAGSHIP

COUNTED = ("computed", "external", *REASONS)  # the columns of the overview


def cell_kind(line) -> str:
    """computed, external or the reason of a missing cell, for one line of a compare frame."""
    if line.verdict in ("external", "missing"):
        return "external" if line.verdict == "external" else line.reason
    return "computed"


def coverage_frames(plan: Plan, metrics_dir) -> dict:
    """(paper, table) -> its compare frame, each missing cell with the plan's reason."""
    from hypvl.replication.compare import compare_table

    return {(paper, table): compare_table(plan.specs[paper], table, metrics_dir, plan.scale,
                                          seeds=json.loads(plan.reports.seeds_arg(paper, table)),
                                          blockers=plan.reports.blockers(paper, table))
            for paper, table in plan.tables()}


def _counts(kinds: list[str]) -> str:
    """`N cells: a computed, b external, c missing (d not built, ...)`."""
    missing = [kind for kind in kinds if kind in REASONS]
    why = ", ".join(f"{missing.count(reason)} {reason}" for reason in REASONS if reason in missing)
    parts = [f"{kinds.count(kind)} {kind}" for kind in ("computed", "external") if kind in kinds]
    parts += [f"{len(missing)} missing ({why})"] if missing else []
    return f"{len(kinds)} cells: {', '.join(parts)}"


def _missing_section(spec, table_name: str, frame) -> list[str]:
    """The missing cells of a table, grouped: reason | rows (experiment) | columns (`all N` where every column)."""
    table = spec.table(table_name)
    mapped = [column for column, target in table.columns.items() if not isinstance(target, External)]
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    missing = frame[frame["verdict"] == "missing"]
    for (reason, row), cells in missing.groupby(["reason", "row"], sort=False):
        columns = tuple(cells["column"])
        label = f"`{row}` (`{table.compared_rows()[row][1]}`)"
        groups.setdefault((reason, columns), []).append(label)
    body = []
    for reason in REASONS:
        for (why, columns), rows in groups.items():
            if why == reason:
                where = f"all {len(columns)}" if list(columns) == mapped else ", ".join(f"`{c}`" for c in columns)
                body.append([reason, ", ".join(rows), where])
    return markdown_table(["missing: why", "rows (experiment)", "columns"], body) if body else []


def _external_line(spec, table_name: str) -> list[str]:
    """The table's external rows and columns with the spec's reasons."""
    table = spec.table(table_name)
    parts = [f"row `{row}`: {escape(target.reason)}" for row, target in table.rows.items()
             if isinstance(target, External)]
    parts += [f"column `{column}`: {escape(target.reason)}" for column, target in table.columns.items()
              if isinstance(target, External)]
    return [f"External: {'; '.join(parts)}."] if parts else []


def _extras_line(plan: Plan, spec, table_name: str) -> list[str]:
    """The rows the extra models (config `extra_models`) have in a table, or why they cannot enter it (one line)."""
    if not plan.extras:
        return []
    rows = ", ".join(f"`{extra.row}`" for extra in plan.extras.values())
    problem = entry_problem(spec.table(table_name))
    return [f"Extra models: {rows} cannot enter this table: {problem}." if problem else f"Extra models: rows {rows}."]


def render_coverage(plan: Plan, frames: dict, metrics_dir, link_from: Path) -> str:
    """The markdown of reports/coverage.md; table links are relative to the folder `link_from`."""
    from hypvl.replication.report import banner

    kinds = {key: [cell_kind(line) for line in frame.itertuples(index=False)] for key, frame in frames.items()}
    every = [kind for values in kinds.values() for kind in values]
    overview = []
    for (paper, table), values in kinds.items():
        report = Path(os.path.relpath(_report_of(plan, paper, table), link_from)).as_posix()
        overview.append([escape(paper), f"[{table}]({report})", str(len(values)),
                         *(str(values.count(kind)) for kind in COUNTED)])
    lines = [
        "# Coverage: which printed cells the suite computes", "",
        f"> {banner(plan.scale)}", "",
        f"Every printed cell of every table: **computed** (ours, from the metric JSONs under `{metrics_dir}`), "
        "**external** (outside the suite, as the spec says) or **missing**, and why: *not run yet* (planned; the "
        "table's report target runs it), *needs weights from outside* (released or pretrained weights), *needs data "
        "the scale lacks*, or *not built*.", "",
        f"**All tables**: {_counts(every)}.", "",
        *markdown_table(["paper", "table", "cells", *COUNTED], overview), "",
    ]
    for paper, spec in sorted(plan.specs.items()):
        lines += [f"## {escape(paper)}", ""]
        for table in spec.tables:
            lines += [f"### {escape(table)}: {escape(spec.table(table).title)}", "",
                      f"{_counts(kinds[(paper, table)])}.", ""]
            section = [*_missing_section(spec, table, frames[(paper, table)]), *_external_line(spec, table),
                       *_extras_line(plan, spec, table)]
            lines += [*section, ""] if section else []
    return "\n".join(lines)


def _report_of(plan: Plan, paper: str, table: str) -> Path:
    """A table's report to link: reports/<paper>/<table>.md, or where only the flagship target (reports/<table>.md,
    the flagship paper's tables) has been made, that one."""
    target = plan.reports.target(paper, table)
    flagship = plan.reports.folder / f"{table}.md"
    return flagship if paper == FLAGSHIP and not target.exists() and flagship.exists() else target


def _coverage(args) -> None:
    """Say for every printed cell whether it is computed, external or missing and why."""
    from hypvl.io import atomic_write

    config = config_from_args(args)
    if args.scale is not None and args.scale != config["scale"]:
        raise InputError(f"--scale {args.scale}: the config is at scale {config['scale']!r} (give that scale's config "
                         "file, e.g. --configfile workflows/config/full.yaml)")
    plan = Plan(config)
    metrics_dir = args.metrics_dir or Path(config["results_dir"]) / "metrics"
    found = len(list(metrics_dir.glob("*/*.json"))) if metrics_dir.is_dir() else 0
    # results are the working directory's (the config's results_dir), not --project's: say where they were read
    where = "" if metrics_dir.is_dir() else (": no such folder, so nothing is computed; run from the folder holding "
                                             "the results or give --metrics-dir")
    print(f"hypvl coverage: computed cells read from {metrics_dir.resolve()} ({found} metric JSONs{where})",
          file=sys.stderr)
    frames = coverage_frames(plan, metrics_dir)
    if args.out is None:
        print(render_coverage(plan, frames, metrics_dir, Path.cwd()))
        return
    with atomic_write(args.out, mode="w", encoding="utf-8") as handle:
        handle.write(render_coverage(plan, frames, metrics_dir, Path(args.out).resolve().parent))


def add_commands(subparsers) -> None:
    """Register `coverage`."""
    coverage = subparsers.add_parser("coverage", help="every table cell: computed, external, or missing and why")
    add_config_arguments(coverage)
    coverage.add_argument("--scale", default=None, help="the scale to judge (must be the config's; default: it)")
    coverage.add_argument("--metrics-dir", type=Path, default=None,
                          help="metric JSONs (default: <results_dir>/metrics of the config)")
    coverage.add_argument("--out", default=None, help="reports/coverage.md (default: print it)")
    coverage.set_defaults(func=_coverage)
