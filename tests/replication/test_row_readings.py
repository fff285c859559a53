"""A printed row the paper and its code describe two ways: the spec's row `readings`, the row compared under its
`reading`, and each other reading as an extra compare line (`<row>__<reading>`, against the row's printed numbers)
that the report marks `(reading <name>)`."""

import pytest

from helpers.replication_fixture import OURS, PAPER, edit_spec, write_metrics
from hypvl.errors import InputError
from hypvl.replication.compare import compare_table
from hypvl.replication.report import report_markdown
from hypvl.spec.load import load_spec
from hypvl.spec.paper import table_needs


def with_readings(document, readings=None, reading="as_printed"):
    """Row `meru` read two ways: tiny_meru (compared as the row) and tiny_clip (`other`)."""
    document["tables"]["table1"]["rows"]["meru"] = {
        "readings": readings or {"as_printed": "tiny_meru", "other": "tiny_clip"}, "reading": reading}


def test_other_readings_of_a_row_are_compared_with_its_printed_numbers(workspace):  # noqa: F811
    spec = load_spec(edit_spec(workspace, with_readings))
    table = spec.table("table1")
    assert table.rows["meru"] == "tiny_meru"
    assert list(table.compared_rows()) == ["clip", "meru", "regionclip", "meru__other"]
    assert table_needs(spec, "table1") == {(exp, task) for exp in ("tiny_clip", "tiny_meru")
                                           for task in ("zs_cifar10", "zs_cifar100", "hierarcaps")}
    frame = compare_table(spec, "table1", write_metrics(workspace, "full"), "full")
    other = frame[frame["row"] == "meru__other"].set_index("column")
    assert set(other["experiment"]) == {"tiny_clip"}
    assert other.loc["acc_a", "ours"] == OURS["tiny_clip"]["zs_cifar10"]["top1"]
    assert other.loc["acc_a", "delta"] == pytest.approx(OURS["tiny_clip"]["zs_cifar10"]["top1"] - PAPER[("meru", "acc_a")])
    assert other.loc["tau", "paper"] == PAPER[("meru", "tau")]
    row = frame[frame["row"] == "meru"].set_index("column")  # the row itself reads its own reading
    assert row.loc["acc_a", "ours"] == OURS["tiny_meru"]["zs_cifar10"]["top1"]
    report = report_markdown(spec, "table1", frame, "table1.png")
    ours = report.split("## Ours")[1].split("## Difference")[0]
    marked = [line for line in ours.splitlines() if "(reading other)" in line]
    assert len(marked) == 1 and f"{OURS['tiny_clip']['zs_cifar10']['top1']:.2f}" in marked[0]


@pytest.mark.parametrize("readings, reading, problem", [
    (None, "as_coded", "tables.table1.rows.meru.reading: unknown reading 'as_coded'"),
    ({"as_printed": "tiny_meru", "released": "tiny_clip"}, "as_printed", "'released' names the released checkpoint"),
    ({"as_printed": "tiny_meru", "other": "tiny_nope"}, "as_printed", "unknown experiment 'tiny_nope'"),
])
def test_row_readings_are_checked(workspace, readings, reading, problem):  # noqa: F811
    path = edit_spec(workspace, lambda document: with_readings(document, readings, reading))
    with pytest.raises(InputError, match=problem):
        load_spec(path)
