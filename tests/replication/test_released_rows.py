"""A printed row's released checkpoint, compared beside our model of the row: the spec's `released` mapping, the
extra compare lines (`<row>__released`, against the row's printed numbers), and the report rows marked
`(released)` and, below paper scale, `stand-in`."""

import json

import pytest

from helpers.replication_fixture import OURS, PAPER, edit_spec, write_metrics
from hypvl.errors import InputError
from hypvl.replication.compare import compare_table
from hypvl.replication.report import outside_mark, report_markdown
from hypvl.spec.load import load_spec
from hypvl.spec.paper import table_needs

RELEASED = {"zs_cifar10": {"top1": 49.0}, "zs_cifar100": {"top1": 28.0}, "hierarcaps": {"kendall_tau": 0.81}}


def with_released(root, scale="smoke"):
    """The fixture spec with a released checkpoint beside the `clip` row, and its metric JSONs."""
    def change(document):
        document["experiments"]["tiny_released_clip"] = {"method": "clip", "backbone": "vit_s16", "data": "grit",
                                                         "source": "released:clip_vit_s", "note": "as released"}
        document["tables"]["table1"]["released"] = {"clip": "tiny_released_clip"}

    path = edit_spec(root, change)
    metrics = write_metrics(root, scale)
    for task, values in RELEASED.items():
        record = {"experiment": "tiny_released_clip", "task": task, "scale": scale, "metrics": values,
                  "n_samples": 10, "provenance": {"config_hash": "cccccccccccc", "git_commit": "c0ffee",
                                                  "date": "2026-11-22T00:04:00+00:00"}}
        (metrics / "tiny_released_clip").mkdir(exist_ok=True)
        (metrics / "tiny_released_clip" / f"{task}.json").write_text(json.dumps(record))
    return load_spec(path, root / "expected"), metrics


def test_a_released_row_is_compared_with_its_rows_printed_numbers(workspace):  # noqa: F811
    spec, metrics = with_released(workspace, "full")
    assert ("tiny_released_clip", "zs_cifar10") in table_needs(spec, "table1")
    frame = compare_table(spec, "table1", metrics, "full")
    assert list(dict.fromkeys(frame["row"])) == ["clip", "meru", "regionclip", "clip__released"]
    released = frame[frame["row"] == "clip__released"].set_index("column")
    assert set(released["experiment"]) == {"tiny_released_clip"}
    assert released.loc["acc_a", "paper"] == PAPER[("clip", "acc_a")]
    assert released.loc["acc_a", "delta"] == pytest.approx(49.0 - PAPER[("clip", "acc_a")])
    assert released.loc["acc_a", "verdict"] == "within" and released.loc["acc_b", "verdict"] == "outside"
    assert released.loc["avg", "ours"] == pytest.approx((49.0 + 28.0) / 2)
    ours = frame[frame["row"] == "clip"].set_index("column")  # the row itself is unchanged
    assert ours.loc["acc_a", "ours"] == OURS["tiny_clip"]["zs_cifar10"]["top1"]


@pytest.mark.parametrize("scale, mark", [("smoke", " (released, stand-in)"), ("full", " (released)")])
def test_the_report_marks_the_released_row(workspace, scale, mark):  # noqa: F811
    spec, metrics = with_released(workspace, scale)
    report = report_markdown(spec, "table1", compare_table(spec, "table1", metrics, scale), "table1.png")
    ours = report.split("## Ours")[1].split("## Difference")[0]
    released = [line for line in ours.splitlines() if mark in line]
    assert len(released) == 1 and "49.00" in released[0]
    assert "`clip__released`" in report.split("## Rows")[1] and "`tiny_released_clip`" in report
    difference = report.split("## Difference")[1].split("## Rows")[0]
    assert any(mark in line and "-1.00" in line for line in difference.splitlines())


def test_weights_from_outside_are_stand_ins_below_paper_scale(workspace):  # noqa: F811
    spec, _ = with_released(workspace)
    assert outside_mark(spec, "tiny_released_clip", "smoke") == " (stand-in)"
    assert outside_mark(spec, "tiny_released_clip", "full") == ""
    assert outside_mark(spec, "tiny_clip", "smoke") == "" and outside_mark(spec, None, "smoke") == ""


@pytest.mark.parametrize("released, problem", [
    ({"regionclip": "tiny_released_clip"}, "'regionclip' is not a printed row mapped to an experiment"),
    ({"clip": "tiny_meru"}, "'tiny_meru' is not an experiment with a released: source"),
])
def test_a_released_mapping_is_checked(workspace, released, problem):  # noqa: F811
    with_released(workspace)
    path = edit_spec(workspace, lambda document: document["tables"]["table1"].update(released=released))
    with pytest.raises(InputError, match=f"tables.table1.released.{list(released)[0]}: {problem}"):
        load_spec(path, workspace / "expected")
