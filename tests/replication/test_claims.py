"""The claims audit: each predicate on a hand-worked table, verdicts, schema errors, and the known
results of the five papers' claims on their own printed numbers."""

import math

import pandas as pd
import pytest
import yaml

from helpers import REPO
from hypvl.errors import InputError
from hypvl.replication.claims.evaluator import Cells, audit_paper, audit_table, evaluate, paper_cells
from hypvl.replication.claims.language import claim_tables, load_claims
from hypvl.replication.claims.render import category, render_claims, table_claims_section, write_claims_report
from hypvl.replication.compare import COLUMNS, write_compare_csv
from hypvl.replication.markdown import escape
from hypvl.spec.load import load_all_specs, load_spec

DATA = REPO / "tests" / "data" / "claims"
TOY = DATA / "replication" / "toy.yaml"

# tests/data/claims/expected/toy/table1.csv, worked by hand:
#        a     b    c (lower is better)   d
#   x  10.0  5.0  1.0                    dnc
#   y  10.0  6.0  2.0                    3.0
#   z   8.0  7.0  0.5                    4.0


@pytest.fixture(scope="module")
def toy():
    return load_spec(TOY, DATA / "expected")


@pytest.fixture(scope="module")
def paper(toy):
    return paper_cells(toy)


def strict_copy(cells: Cells, drop=()) -> Cells:
    """The same numbers read as ours (strict), with the cells in `drop` not measured."""
    values = {key: (None if ".".join(key) in drop else value) for key, value in cells.values.items()}
    return Cells(values, cells.rows, cells.columns, strict=True)


def holds(predicate, cells):
    return evaluate(predicate, cells).holds


def test_count_best_tie_handling(paper):
    on_a = {"table": "table1", "target": ["x"], "columns": ["a"], "op": "==", "k": 1}
    assert holds({"count_best": {**on_a, "ties": "win"}}, paper) is True   # 10 = 10: a shared best
    assert holds({"count_best": {**on_a, "ties": "loss"}}, paper) is False


def test_count_best_direction_and_skipped_token(paper):
    # z: a no (8 < 10), b yes (7), c yes (0.5, lower is better), d yes (4 > 3; x's dnc skipped) -> 3 of 4
    z_best = {"table": "table1", "target": ["z"], "lower_is_better": ["c"], "ties": "loss", "op": "==", "k": 3}
    assert holds({"count_best": z_best}, paper) is True
    # c read as higher-is-better: y (2.0) is best, so z wins only b and d
    assert holds({"count_best": {**z_best, "lower_is_better": [], "k": 2}}, paper) is True
    # x's d is `dnc`: skipped on the paper's numbers, so y and z compete there and x wins no column strictly
    x_best = {"table": "table1", "target": ["x"], "ties": "loss", "op": "==", "k": 0}
    assert holds({"count_best": x_best}, paper) is True


def test_count_pairs_counts_ties_as_told(paper):
    pairs = {"table": "table1", "pairs": [["x", "y"]], "columns": ["a", "b", "c"], "op": "==", "lower_is_better": ["c"]}
    assert holds({"count_pairs": {**pairs, "ties": "win", "k": 2}}, paper) is True   # a tie + c (1 < 2)
    assert holds({"count_pairs": {**pairs, "ties": "loss", "k": 1}}, paper) is True  # c only
    outcome = evaluate({"count_pairs": {**pairs, "ties": "loss", "k": 1}}, paper)
    assert "x<y.b" in outcome.detail and "x~y.a" in outcome.detail


def test_compare_value_forms(paper):
    assert holds({"compare": {"left": {"difference": ["table1.y.b", "table1.x.b"]}, "op": "==", "right": 1.0}}, paper)
    assert holds({"compare": {"left": {"mean": ["table1.x.a", "table1.z.a"]}, "op": "==", "right": 9.0}}, paper)
    assert holds({"compare": {"left": {"row_mean": "table1.z", "columns": ["a", "b"]}, "op": "==", "right": 7.5}}, paper)
    assert holds({"compare": {"left": "table1.z.c", "op": "<", "right": "table1.x.c"}}, paper)
    assert not holds({"compare": {"left": "table1.z.c", "op": ">=", "right": "table1.x.c"}}, paper)
    # 51.8 - 37.3 is 14.499999... in floats; printed numbers compare equal
    cells = Cells({("t", "r", "a"): 51.8, ("t", "r", "b"): 37.3}, {"t": ["r"]}, {"t": ["a", "b"]}, strict=False)
    assert holds({"compare": {"left": {"difference": ["t.r.a", "t.r.b"]}, "op": "==", "right": 14.5}}, cells)


def test_compare_on_a_token_is_undecided(paper):
    outcome = evaluate({"compare": {"left": "table1.x.d", "op": ">=", "right": 3.0}}, paper)
    assert outcome.holds is None and outcome.missing == ("table1.x.d",)


def test_in_range_and_max_abs_difference(paper):
    assert holds({"in_range": {"cells": ["table1.x.b", "table1.y.b", "table1.z.b"], "min": 5.0, "max": 7.0}}, paper)
    assert not holds({"in_range": {"cells": ["table1.x.b", "table1.z.b"], "min": 5.5, "max": 7.0}}, paper)
    gap = {"table": "table1", "pairs": [["x", "y"]], "columns": ["a", "b", "c"], "value": 1.0}
    assert holds({"max_abs_difference": {**gap, "op": "<="}}, paper)        # |5-6| = |1-2| = 1
    assert not holds({"max_abs_difference": {**gap, "op": "<"}}, paper)


def test_all_of_any_of(paper):
    true = {"compare": {"left": "table1.y.b", "op": ">", "right": "table1.x.b"}}
    false = {"compare": {"left": "table1.y.b", "op": "<", "right": "table1.x.b"}}
    assert holds({"all_of": [true, true]}, paper) and not holds({"all_of": [true, false]}, paper)
    assert holds({"any_of": [false, true]}, paper) and not holds({"any_of": [false, false]}, paper)


def test_ours_with_a_missing_cell_is_not_evaluable(paper):
    ours = strict_copy(paper, drop={"table1.z.b"})
    best = {"count_best": {"table": "table1", "target": ["z"], "columns": ["a", "b"], "ties": "loss", "op": "==", "k": 1}}
    outcome = evaluate(best, ours)
    assert outcome.holds is None and "table1.z.b" in outcome.missing
    # a set predicate that skips the paper's `dnc` does not skip a cell of ours that is not measured
    assert evaluate({"count_pairs": {"table": "table1", "pairs": [["y", "x"]], "ties": "loss", "op": ">=", "k": 0}},
                    strict_copy(paper)).holds is None
    assert evaluate({"all_of": [best, {"compare": {"left": 1, "op": "<", "right": 2}}]}, ours).holds is None


def test_toy_verdicts(toy):
    audits = {audit.claim.id: audit for audit in audit_paper(toy, DATA / "no_tables")}
    assert audits["x_best_on_a"].paper_verdict == "supported only under ties_win"
    assert audits["z_beats_y_everywhere"].paper_verdict == "contradicted"
    assert audits["b_gap_is_one"].paper_verdict == "supported"
    assert audits["d_of_x"].paper_verdict == "no number printed"
    assert audits["compute_hours"].paper_verdict == "not checkable from tables"
    assert {audit.our_verdict for audit in audits.values()} == {"not evaluable yet", "not checkable from tables"}
    assert category(audits["x_best_on_a"].paper_verdict) == "one reading"


def toy_ours() -> pd.DataFrame:
    """A compare table of ours for the toy's table1 (z.d not measured)."""
    ours = {"x": [9.0, 8.0, 3.0, 1.0], "y": [10.0, 6.0, 2.0, 3.0], "z": [8.0, 7.0, 0.5, math.nan]}
    lines = [{**dict.fromkeys(COLUMNS, ""), "row": row, "column": column, "ours": value, "verdict": "not_comparable",
              "scale": "smoke", "tolerance": 1.0, "paper": math.nan, "delta": math.nan,
              "run_config_hash": "abc123abc123", "git_commit": "c0ffee", "git_dirty": "False"}
             for row, values in ours.items() for column, value in zip("abcd", values)]
    return pd.DataFrame(lines, columns=list(COLUMNS))


def test_report_reads_ours_from_compare_csvs(toy, tmp_path):
    frame = toy_ours()
    write_compare_csv(frame, tmp_path / "tables" / "toy" / "table1.csv")
    audits = write_claims_report({"toy": toy}, tmp_path / "tables", "smoke", tmp_path / "claims.md")
    by_id = {audit.claim.id: audit for audit in audits["toy"]}
    assert by_id["x_best_on_a"].our_verdict == "contradicted"          # ours: y (10) beats x (9) on a
    assert by_id["b_gap_is_one"].our_verdict == "contradicted"         # 6 - 8 = -2
    assert by_id["d_of_x"].our_verdict == "contradicted"               # ours measured x.d = 1 < 3
    assert by_id["z_beats_y_everywhere"].our_verdict == "not evaluable yet"  # z.d not measured
    text = (tmp_path / "claims.md").read_text()
    assert "> X is best on a. (Sec. 1)" in text
    assert text.split("## Summary")[0].count("SMOKE SCALE") == 1 and "they are not findings" in text
    assert "- By ours (smoke scale: not findings): 0 supported" in text
    # the paper's summary table keeps the verdicts on the page: no sentence column (the sentence is under its heading)
    header = next(line for line in text.splitlines() if line.startswith("| claim"))
    assert header.replace(" ", "") == "|claim|where|paper'snumbers|ours|"
    assert "1 supported only under one reading, 1 contradicted, 1 no number printed" in text
    assert "z_beats_y_everywhere" in text.split("## toy")[0]  # listed among the contradicted in the summary
    provenance = text.split("## Provenance", 1)[1]  # of the numbers the audit read
    assert "`abc123abc123`" in provenance and "`c0ffee`; uncommitted changes: no" in provenance


def write_toy(tmp_path, claims) -> tuple:
    document = yaml.safe_load(TOY.read_text())
    document["claims"] = claims
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return load_spec(path, DATA / "expected"), path


@pytest.mark.parametrize("claims, message", [
    ({"c": {"where": "x", "check": {"compare": {"left": 1, "op": "<", "right": 2}}}}, "claims.c: 'sentence'"),
    ({"c": {"sentence": "s", "where": "x", "check": {"biggest": {}}}}, "claims.c.check"),
    ({"c": {"sentence": "s", "where": "x", "check": {"compare": {"left": 1, "op": "<<", "right": 2}}}}, "claims.c.check"),
    ({"c": {"sentence": "s", "where": "x", "check": {"compare": {"left": "table1.w.a", "op": "<", "right": 2}}}},
     "claims.c.check.compare: row 'w' is not in table1"),
    ({"c": {"sentence": "s", "where": "x", "check": {"all_of": [{"compare": {"left": 1, "op": "<", "right": 2}}, {
        "count_best": {"table": "table1", "rows": ["x", "y"], "target": ["z"], "ties": "win", "op": "==", "k": 1}}]}}},
     "claims.c.check.all_of[1].count_best: target rows ['z'] are not among its rows"),
    ({"c": {"sentence": "s", "where": "x", "readings": {
        "one": {"description": "d", "check": {"count_best": {"table": "table1", "target": ["x"], "columns": ["e"],
                                                             "ties": "win", "op": "==", "k": 1}}},
        "two": {"description": "d", "check": {"compare": {"left": 1, "op": "<", "right": 2}}}}}},
     "claims.c.readings.one.check.count_best: column 'e' is not in table1"),
    ({"c": {"sentence": "s", "where": "x", "check": {"count_pairs": {"table": "table9", "pairs": [["x", "y"]],
                                                                     "ties": "win", "op": "==", "k": 1}}}},
     "no table 'table9'"),
])
def test_bad_claims_name_file_and_key(tmp_path, claims, message):
    spec, path = write_toy(tmp_path, claims)
    with pytest.raises(InputError) as error:
        load_claims(spec)
    assert str(path) in str(error.value) and message in str(error.value)


# ---- the five papers, on their own printed numbers ---------------------------------------------------------------

@pytest.fixture(scope="module")
def papers():
    specs = load_all_specs(REPO / "replication", REPO / "expected")
    return {paper: {a.claim.id: a for a in audit_paper(spec, REPO / "tests" / "data" / "claims" / "no_tables")}
            for paper, spec in specs.items()}


def reading(audit, name):
    return dict(zip((r.name for r in audit.claim.readings), audit.paper))[name]


def test_every_paper_has_its_claims(papers):
    assert {paper: len(audits) >= 6 for paper, audits in papers.items()} == dict.fromkeys(papers, True)


def test_hycoclip_15_of_16_holds_across_backbones_not_for_vits(papers):
    audit = papers["hycoclip"]["hyco_beats_baselines_15_of_16"]
    assert reading(audit, "grit_all_backbones").holds is True
    vits = reading(audit, "grit_vits_only")
    assert vits.holds is False and "best in 12 columns" in vits.detail and "tied best in cifar10" in vits.detail
    assert "best in 5 columns" in reading(audit, "redcaps_vits").detail
    assert audit.paper_verdict == "supported only under grit_all_backbones, grit_vitb_only"


def test_hycoclip_contradictions_are_flagged(papers):
    boxes = papers["hycoclip"]["hyco_boxes_hurt_retrieval"]
    assert boxes.paper_verdict == "contradicted"
    assert "vits_meru<vits_meru_boxes.coco_i2t_r5" in boxes.paper[0].detail
    assert papers["hycoclip"]["hyco_vlco_reaches_60"].paper_verdict == "supported only under rounded"  # 59.8
    assert papers["hycoclip"]["hyco_hierarcaps_outperforms"].paper_verdict == "supported only under recall_and_tau"


def test_known_counts_of_the_other_papers(papers):
    meru = papers["meru"]["meru_classification_13_of_16"]
    assert meru.paper_verdict == "supported only under best_over_sizes"
    assert "10 wins" in reading(meru, "each_backbone").detail
    assert papers["syntax_vse"]["syn_classification_11_of_16"].paper_verdict == "supported"
    assert papers["syntax_vse"]["syn_vlchecklist_10_of_13"].paper_verdict == "supported"
    assert papers["poinclip"]["poin_best_overall_13_of_18"].paper_verdict == "supported only under column_best_ties_win"
    assert papers["poinclip"]["poin_retrieval_beats_meru_3_of_4"].paper_verdict == "supported only under ties_win"
    assert papers["hierarcaps"]["hcaps_hyperlex_vs_dedicated"].paper_verdict.startswith("supported only under doa_e_rho_n")


def test_render_lists_contradicted_and_reading_dependent_claims(papers):
    audits = {paper: list(by_id.values()) for paper, by_id in papers.items()}
    text = render_claims(audits, "smoke")
    summary = text.split("## hierarcaps")[0]
    contradicted, reading_dependent = summary.split("Supported by the paper's own tables only under one reading:")
    assert "`hyco_boxes_hurt_retrieval`" in contradicted.split("Contradicted by the paper's own tables:")[1]
    assert "`meru_classification_13_of_16`" in reading_dependent
    assert "`hyco_boxes_hurt_retrieval`" not in reading_dependent
    assert "scale `smoke`" in text and "not findings" in text
    assert "SMOKE" not in render_claims(audits, "full") and "not findings" not in render_claims(audits, "full")


def test_claims_command_writes_the_report(tmp_path):
    from hypvl.cli import main

    out = tmp_path / "claims.md"
    argv = ["claims", "--replication-dir", str(DATA / "replication"), "--expected-dir", str(DATA / "expected"),
            "--tables-dir", str(tmp_path / "tables"), "--scale", "smoke", "--out", str(out)]
    assert main(argv) == 0
    text = out.read_text()
    assert "5 claims: 4 checkable" in text and "## toy" in text


def test_compare_command_writes_one_row(tmp_path):
    from hypvl.cli import main
    from hypvl.replication.compare import read_compare_csv

    out = tmp_path / "row.csv"
    argv = ["compare", "--spec", str(TOY), "--table", "table1", "--expected-dir", str(DATA / "expected"),
            "--metrics-dir", str(tmp_path / "metrics"), "--scale", "smoke", "--out", str(out)]
    assert main([*argv, "--row", "y"]) == 0
    frame = read_compare_csv(out)
    assert list(frame["row"]) == ["y"] * 4 and list(frame["column"]) == list("abcd")
    assert set(frame["verdict"]) == {"missing"}
    assert main([*argv, "--row", "w"]) == 1


def test_a_tables_report_lists_its_claims_with_the_audits_verdicts(toy, tmp_path):
    """`## Claims on this table` of a table's report: each claim on it, with the same verdicts as the whole audit
    (reports/claims.md) on the same numbers, a claim in prose only among them; smoke verdicts flagged as such."""
    frame = toy_ours()
    write_compare_csv(frame, tmp_path / "tables" / "toy" / "table1.csv")
    whole = {a.claim.id: a for a in audit_paper(toy, tmp_path / "tables")}
    text = "\n".join(table_claims_section(toy, "table1", frame, "smoke"))
    assert text.startswith("## Claims on this table") and "they are not findings" in text
    listed = {line.split("`")[1]: line for line in text.split("<details>")[0].splitlines() if line.startswith("- `")}
    assert set(listed) == set(whole) - {"compute_hours"}  # prose only: no table read
    for claim_id, line in listed.items():
        verdicts = f"Paper's numbers: {escape(whole[claim_id].paper_verdict)}; ours: {escape(whole[claim_id].our_verdict)}."
        assert line.endswith(verdicts), line
    assert "<details><summary>Readings of each claim</summary>" in text  # a summary the HTML page passes
    assert "not findings" not in "\n".join(table_claims_section(toy, "table1", frame, "full"))


def test_a_claim_reading_several_tables_is_named_on_each_and_audited_whole(tmp_path):
    specs = load_all_specs(REPO / "replication", REPO / "expected")
    spanning = [(spec, claim) for spec in specs.values() for claim in load_claims(spec)
                if len(claim_tables(claim)) > 1]
    assert spanning, "no claim of the five papers reads two tables: this test needs one"
    spec, claim = spanning[0]
    for table in sorted(claim_tables(claim)):
        audits, others = audit_table(spec, table, pd.DataFrame(columns=list(COLUMNS)))
        assert claim in others and claim.id not in {a.claim.id for a in audits}
        text = "\n".join(table_claims_section(spec, table, pd.DataFrame(columns=list(COLUMNS)), "full"))
        assert f"`{claim.id}` (" in text.split("- Reading other tables too")[1]
    alone = [c for c in load_claims(spec) if claim_tables(c) == {"table1"}]
    assert all(c.id in "\n".join(table_claims_section(spec, "table1", pd.DataFrame(columns=list(COLUMNS)), "full"))
               for c in alone)
