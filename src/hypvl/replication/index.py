"""reports/index.md: the overview pages, then per paper how many of its cells agree with the paper and a link to each
table report with its summary line."""

import os
import re
from pathlib import Path

import pandas as pd

from hypvl.errors import InputError
from hypvl.io import atomic_write
from hypvl.replication.compare import FULL_SCALE, read_compare_csv
from hypvl.replication.markdown import escape
from hypvl.replication.markdown import table as markdown_table
from hypvl.replication.report import SUMMARY_PREFIX, banner

# the agreement columns of the index, in order: verdict -> heading
AGREEMENT = {"within": "within", "outside": "outside", "within_seed_spread": "within seed spread",
             "not_comparable": "not comparable", "missing": "missing"}

# reports beside the table reports that the index links first, with what they say
OVERVIEWS = {
    "claims.md": "[Claims audit]({link}): every explicit claim of the papers, checked on the paper's numbers and on ours.",
    "coverage.md": "[Coverage]({link}): every printed cell, computed, external, or missing and why.",
}


def _natural_key(path: Path):
    """Sort key putting table2 before table10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.stem)]


def compared(tables_dir, reports: dict[str, list[str]]) -> dict[str, pd.DataFrame]:
    """Per paper (in `reports` order: paper -> its tables) its tables' compare CSVs
    (`<tables_dir>/<paper>/<table>.csv`), read once and joined."""
    return {paper: pd.concat([read_compare_csv(Path(tables_dir, paper, f"{table}.csv")) for table in tables])
            if tables else pd.DataFrame({"verdict": [], "scale": []}, dtype=str) for paper, tables in reports.items()}


def agreement(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per paper (rows) the number of cells of each AGREEMENT verdict in its compare tables (`compared`), and
    `cells`, every cell."""
    counts = {paper: {**{verdict: int((frame["verdict"] == verdict).sum()) for verdict in AGREEMENT},
                      "cells": len(frame)} for paper, frame in frames.items()}
    return pd.DataFrame.from_dict(counts, orient="index", columns=[*AGREEMENT, "cells"])


def scales(frames: dict[str, pd.DataFrame]) -> list[str]:
    """The scales the compare tables were measured at, paper scale last."""
    found = {scale for frame in frames.values() for scale in frame["scale"]}
    return sorted(found, key=lambda scale: (scale == FULL_SCALE, scale))


def agreement_table(counts: pd.DataFrame) -> list[str]:
    """The markdown table of `agreement`: a row per paper, its counts, and the cells neither external nor without
    a paper number."""
    body = [[escape(paper), *(str(line[verdict]) for verdict in AGREEMENT), str(line["cells"])]
            for paper, line in counts.iterrows()]
    return markdown_table(["paper", *AGREEMENT.values(), "all cells"], body,
                          align=["left", *["right"] * (len(AGREEMENT) + 1)])


def render_index(reports_dir, out, tables_dir=None) -> None:
    """Write `out`: links to reports/claims.md and reports/coverage.md, the per-paper agreement counts (from the
    compare CSVs under `tables_dir`, where given) and, per paper, each table report with its summary line."""
    reports_dir = Path(reports_dir)
    out = Path(out)
    lines = ["# hypvl reports", ""]
    overviews = [text.format(link=Path(os.path.relpath(reports_dir / name, out.parent)).as_posix())
                 for name, text in OVERVIEWS.items() if (reports_dir / name).is_file()]
    lines += [*(f"- {text}" for text in overviews), ""] if overviews else []
    reports = {path: sorted(path.glob("*.md"), key=_natural_key) for path in sorted(reports_dir.iterdir())
               if path.is_dir() and any(path.glob("*.md"))}
    if tables_dir is not None and reports:
        frames = compared(tables_dir, {paper.name: [path.stem for path in found] for paper, found in reports.items()})
        banners = [banner(scale) for scale in scales(frames)]  # what the tables' numbers are
        lines += ["## Agreement with the papers", "", *(f"> {text}" for text in banners), *([""] if banners else []),
                  "The cells of each paper's tables below, by verdict.", "", *agreement_table(agreement(frames)), ""]
    for paper, tables in reports.items():
        lines += [f"## {escape(paper.name)}", ""]
        for report in tables:
            text = report.read_text(encoding="utf-8").splitlines()
            if not text or not text[0].startswith("# "):
                raise InputError(f"{report}: not a table report (its first line is not a '# ' title)")
            summary = next((line for line in text if line.startswith(SUMMARY_PREFIX)), "")
            link = Path(os.path.relpath(report, out.parent)).as_posix()
            lines.append(f"- [{text[0][2:]}]({link}) {summary.removeprefix(SUMMARY_PREFIX).strip()}".rstrip())
        lines.append("")
    with atomic_write(out, mode="w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
