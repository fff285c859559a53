"""The claims report: the audits of every paper's claims as markdown (`reports/claims.md`)."""

from pathlib import Path

import pandas as pd

from hypvl.io import atomic_write
from hypvl.replication.claims.evaluator import OURS_UNKNOWN, PAPER_UNKNOWN, Audit, Outcome, audit_paper, audit_table
from hypvl.replication.claims.language import claim_tables
from hypvl.replication.compare import FULL_SCALE, read_compare_csv
from hypvl.replication.markdown import escape
from hypvl.replication.markdown import table as markdown_table
from hypvl.replication.provenance_section import provenance_section
from hypvl.spec.paper import PaperSpec


def _md(text: str) -> str:
    """Text as literal markdown on one line: specials escaped (e.g. `τ_d`, `a<b`), newlines folded."""
    return escape(text.replace("\n", " "))


def render_claims(audits: dict[str, list[Audit]], scale: str, provenance=()) -> str:
    """The claims report: a summary, then per paper each claim with its verdicts and per-reading details, then the
    `provenance` lines of our numbers."""
    every = [audit for paper in audits.values() for audit in paper]
    checkable = [a for a in every if not a.claim.not_checkable]
    paper_counts = _tally(a.paper_verdict for a in checkable)
    our_counts = _tally(a.our_verdict for a in checkable)
    contradicted = [a for a in checkable if category(a.paper_verdict) == "contradicted"]
    partial = [a for a in checkable if category(a.paper_verdict) == "one reading"]
    lines = ["# Claims audit", "", *_scale_note(scale),
             "Every explicit quantitative claim of the papers, as a predicate over table cells, evaluated on the "
             f"paper's printed numbers and on ours (scale `{scale}`).", "",
             "## Summary", "",
             f"- {len(every)} claims: {len(checkable)} checkable from the tables, "
             f"{len(every) - len(checkable)} stated in prose only.",
             f"- By the papers' own numbers: {_tally_text(paper_counts, PAPER_UNKNOWN)}.",
             f"- By ours{'' if scale == FULL_SCALE else f' ({scale} scale: not findings)'}: "
             f"{_tally_text(our_counts, OURS_UNKNOWN)}.", ""]
    if contradicted:
        lines += ["Contradicted by the paper's own tables:", ""]
        lines += [f"- `{a.claim.id}` ({a.claim.paper}, {_md(a.claim.where)}): \"{_md(a.claim.sentence)}\"" for a in contradicted]
        lines.append("")
    if partial:
        lines += ["Supported by the paper's own tables only under one reading:", ""]
        lines += [f"- `{a.claim.id}` ({a.claim.paper}, {_md(a.claim.where)}): {_md(a.paper_verdict)}" for a in partial]
        lines.append("")
    for paper, paper_audits in audits.items():
        lines += [f"## {paper}", ""]
        # the sentence is under each claim's heading below: the verdicts stay on the page
        lines += markdown_table(["claim", "where", "paper's numbers", "ours"],
                                [[f"`{a.claim.id}`", _md(a.claim.where), _md(a.paper_verdict), _md(a.our_verdict)]
                                 for a in paper_audits])
        lines.append("")
        for a in paper_audits:
            lines += [f"### `{a.claim.id}`", "", *_claim_details(a)]
    return "\n".join([*lines, *provenance, *([""] if provenance else [])])


def _scale_note(scale: str) -> list[str]:
    """The note above verdicts on numbers not of paper scale: they say the claim is computed, nothing of the paper."""
    if scale == FULL_SCALE:
        return []
    return [f"> {scale.upper()} SCALE: our verdicts show that the pipeline computes each claim, not whether it "
            "replicates; they are not findings.", ""]


def _claim_details(a: Audit) -> list[str]:
    """A claim's sentence, note and each reading's outcome on the paper's numbers and on ours."""
    lines = [f"> {_md(a.claim.sentence)} ({_md(a.claim.where)})", ""]
    if a.claim.note:
        lines += [_md(a.claim.note), ""]
    if a.claim.not_checkable:
        return [*lines, f"Not checkable from the tables: {_md(a.claim.not_checkable)}", ""]
    for reading, mine, theirs in zip(a.claim.readings, a.ours, a.paper):
        ours = mine.detail if mine.holds is not None else _missing_text(mine)
        lines.append(f"- **{_md(reading.name)}** ({_md(reading.description)}): paper {_mark(theirs)} "
                     f"{_md(theirs.detail)}; ours {_mark(mine)} {_md(ours)}")
    return [*lines, ""]


def table_claims_section(spec: PaperSpec, table_name: str, frame: pd.DataFrame, scale: str) -> list[str]:
    """`## Claims on this table` of a table's report: each claim reading this table alone, with its verdicts on the
    paper's numbers and on ours (`frame`) and its readings; the claims also reading other tables, named, with where
    their audit is (`reports/claims.md`). Nothing where the paper makes no claim on the table."""
    audits, spanning = audit_table(spec, table_name, frame)
    if not audits and not spanning:
        return []
    lines = ["## Claims on this table", "", *_scale_note(scale)]
    # a list, not a table: a sentence wraps, and the verdicts stay on the page
    lines += [f"- `{a.claim.id}`: \"{_md(a.claim.sentence)}\" Paper's numbers: {_md(a.paper_verdict)}; ours: "
              f"{_md(a.our_verdict)}." for a in audits]
    if spanning:
        lines.append("- Reading other tables too (audited in `reports/claims.md`): "
                     + ", ".join(f"`{claim.id}` ({', '.join(sorted(claim_tables(claim) - {table_name}))})"
                                 for claim in spanning) + ".")
    lines.append("")
    if audits:
        lines += _details_block("Readings of each claim", [line for a in audits
                                                           for line in [f"**`{a.claim.id}`**", "", *_claim_details(a)]])
    return lines


def _details_block(summary: str, lines: list[str]) -> list[str]:
    """`lines` collapsed under `summary` (words only: hypvl.replication.html passes no other summary)."""
    return [f"<details><summary>{summary}</summary>", "", *lines, "</details>", ""]


CATEGORIES = ("supported", "one reading", "contradicted", "not evaluable")


def category(text: str) -> str:
    """The summary category of a verdict: supported, one reading, contradicted or not evaluable."""
    if text.startswith("supported only under") and not text.endswith(OURS_UNKNOWN):
        return "one reading"
    if text.endswith((OURS_UNKNOWN, PAPER_UNKNOWN)):
        return "not evaluable"
    return "contradicted" if text == "contradicted" else "supported"


def _tally(verdicts) -> dict[str, int]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for text in verdicts:
        counts[category(text)] += 1
    return counts


def _tally_text(counts: dict[str, int], unknown: str) -> str:
    names = {"one reading": "supported only under one reading", "not evaluable": unknown}
    return ", ".join(f"{counts[name]} {names.get(name, name)}" for name in CATEGORIES)


def _mark(outcome: Outcome) -> str:
    return {True: "✓", False: "✗", None: "?"}[outcome.holds]


def _missing_text(outcome: Outcome) -> str:
    shown = ", ".join(outcome.missing[:4]) + (" ..." if len(outcome.missing) > 4 else "")
    return f"not evaluable yet ({len(outcome.missing)} cells missing: {shown})"


def write_claims_report(specs: dict[str, PaperSpec], tables_dir, scale: str, out) -> dict[str, list[Audit]]:
    """Audit every spec's claims and write the markdown report to `out` atomically; return the audits."""
    audits = {paper: audit_paper(spec, tables_dir) for paper, spec in sorted(specs.items())}
    frames = [read_compare_csv(path) for paper, spec in sorted(specs.items()) for table in spec.tables
              if (path := Path(tables_dir) / paper / f"{table}.csv").is_file()]
    provenance = provenance_section(pd.concat(frames, ignore_index=True), per_row=False) if frames else []
    with atomic_write(out, mode="w", encoding="utf-8") as handle:
        handle.write(render_claims(audits, scale, provenance))
    return audits
