"""Replication layer: spec validation, compare (join, deltas, verdicts), reports, plots, provenance, CLI."""

import argparse
import datetime
import hashlib
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy
import pandas as pd
import pytest
import yaml
from conftest import REPO
from PIL import Image

from hypvl.errors import InputError
from hypvl.provenance import config_hash, provenance
from hypvl.replication.commands import add_commands
from hypvl.replication.compare import compare_table, read_compare_csv, write_compare_csv
from hypvl.replication.coverage import Blockers
from hypvl.replication.report import PILOT_BANNER, SMOKE_BANNER, write_report
from hypvl.spec.load import load_all_specs, load_spec
from hypvl.spec.paper import table_needs
from hypvl.spec.tables import External

FIXTURE = Path(__file__).parent / "data" / "replication"

# The fixture's printed numbers, read by hand from tests/data/replication/expected/tiny/table1.csv.
PAPER = {
    ("clip", "acc_a"): 50.0, ("clip", "acc_b"): 30.5, ("clip", "tau"): 0.84, ("clip", "avg"): 40.2,
    ("meru", "acc_a"): 31.2, ("meru", "acc_b"): None, ("meru", "tau"): 0.79, ("meru", "avg"): None,
    ("regionclip", "acc_a"): 40.1, ("regionclip", "acc_b"): 20.0, ("regionclip", "tau"): None,
    ("regionclip", "avg"): 30.1,
}
PRINTED = {
    ("clip", "acc_a"): "50.0", ("clip", "acc_b"): "30.5", ("clip", "tau"): "0.84", ("clip", "avg"): "40.2",
    ("meru", "acc_a"): "31.2", ("meru", "acc_b"): "-", ("meru", "tau"): "0.79", ("meru", "avg"): "dnc",
    ("regionclip", "acc_a"): "40.1", ("regionclip", "acc_b"): "20.0", ("regionclip", "tau"): "n/a",
    ("regionclip", "avg"): "30.1",
}
# Our (made-up) measurements: experiment -> task -> metric -> value.
OURS = {
    "tiny_clip": {"zs_cifar10": {"top1": 51.0}, "zs_cifar100": {"top1": 29.49}, "hierarcaps": {"kendall_tau": 0.86}},
    "tiny_meru": {"zs_cifar10": {"top1": 32.2}, "zs_cifar100": {"top1": 12.5}, "hierarcaps": {"kendall_tau": 0.76}},
}
HASHES = {"tiny_clip": "aaaaaaaaaaaa", "tiny_meru": "bbbbbbbbbbbb"}


@pytest.fixture
def workspace(tmp_path):
    """A copy of the fixture spec and expected CSV in tmp_path."""
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    return tmp_path


def write_metrics(root: Path, scale: str, skip=()) -> Path:
    """Write OURS as metric JSONs under root/results/<scale>/metrics, leaving out (experiment, task) in skip."""
    metrics_dir = root / "results" / scale / "metrics"
    for experiment, tasks in OURS.items():
        for task, metrics in tasks.items():
            if (experiment, task) in skip:
                continue
            path = metrics_dir / experiment / f"{task}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            record = {
                "experiment": experiment, "task": task, "scale": scale, "metrics": metrics, "n_samples": 10,
                "provenance": {"config_hash": HASHES[experiment], "git_commit": "c0ffee", "date":
                               "2026-11-22T00:04:00+00:00", "packages": {}, "seconds": 1.0},
            }
            path.write_text(json.dumps(record))
    return metrics_dir


def edit_spec(root: Path, change) -> Path:
    """Apply change(document) to the fixture spec in root and write it back; return its path."""
    path = root / "replication" / "tiny.yaml"
    document = yaml.safe_load(path.read_text())
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def our_value(experiment: str, row: str, column: str) -> float:
    """Our number for a cell, computed from OURS by hand (avg = mean of zs_cifar10 and zs_cifar100)."""
    tasks = {"acc_a": ["zs_cifar10"], "acc_b": ["zs_cifar100"], "tau": ["hierarcaps"], "avg": ["zs_cifar10", "zs_cifar100"]}[column]
    metric = "kendall_tau" if column == "tau" else "top1"
    return sum(OURS[experiment][task][metric] for task in tasks) / len(tasks)


# --- spec ---------------------------------------------------------------------------------------


def test_spec_loads_in_printed_order_with_externals_and_needs(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    table = spec.tables["table1"]
    assert list(table.rows) == ["clip", "meru", "regionclip"]
    assert list(table.columns) == ["acc_a", "acc_b", "tau", "avg"]
    assert table.rows["regionclip"] == External("RegionCLIP is not trained by this suite")
    assert spec.experiments["tiny_meru"].boxes and not spec.experiments["tiny_clip"].boxes
    meru = spec.experiments["tiny_meru"]  # merged from the tiny_clip anchor, method overridden
    assert (meru.method, meru.seed, meru.overrides, meru.note) == ("meru", 3, {"steps": 10}, "boxes as extra samples")
    assert table.tolerance_for("tau") == 0.02 and table.tolerance_for("acc_a") == 1.0
    assert table_needs(spec, "table1") == {
        (experiment, task) for experiment in ("tiny_clip", "tiny_meru") for task in ("zs_cifar10", "zs_cifar100", "hierarcaps")
    }


@pytest.mark.parametrize(
    "change, key, detail",
    [
        (lambda d: d["tables"]["table1"]["columns"].pop("avg"), "tables.table1.columns", "avg"),
        (lambda d: d["tables"]["table1"]["rows"].pop("meru"), "tables.table1.rows", "meru"),
        (lambda d: d["tables"]["table1"]["rows"].update(meru="tiny_nope"), "tables.table1.rows.meru", "tiny_nope"),
        (lambda d: d["tables"]["table1"]["rows"].update(vitb="tiny_clip"), "tables.table1.rows.vitb", "vitb"),
        (lambda d: d["tables"]["table1"]["columns"].update(extra={"task": "x", "metric": "y"}),
         "tables.table1.columns.extra", "extra"),
        (lambda d: d["tables"]["table1"].update(tolerence=d["tables"]["table1"].pop("tolerance")),
         "tables.table1", "tolerence"),
        (lambda d: d["experiments"]["tiny_clip"].update(sed=1), "experiments.tiny_clip", "sed"),
        (lambda d: d["tables"]["table1"]["columns"]["acc_a"].update(metric=3),
         "tables.table1.columns.acc_a.metric", "3"),
        (lambda d: d["tables"]["table1"].update(expected="table9.csv"), "tables.table1.expected", "table9.csv"),
        (lambda d: d["tables"]["table1"]["columns"]["acc_a"].update(task="zs_cifar01"),
         "tables.table1.columns.acc_a", "unknown task 'zs_cifar01' (did you mean 'zs_cifar10'"),
        (lambda d: d["tables"]["table1"]["columns"]["avg"].update(mean_of=["zs_cifar10", "zs_cifr100"]),
         "tables.table1.columns.avg", "unknown task 'zs_cifr100'"),
        (lambda d: d["tables"]["table1"]["columns"]["tau"].update(metric="kendal_tau"),
         "tables.table1.columns.tau", "unknown metric of task 'hierarcaps' 'kendal_tau' (did you mean 'kendall_tau'"),
        (lambda d: d["tables"]["table1"].update(ablation={"varies": "_modle"}), "tables.table1.ablation.varies",
         "unknown label column of"),
        (lambda d: d["tables"]["table1"].update(ablation={"varies": "_model", "reference": ["vitb"]}),
         "tables.table1.ablation.reference", "unknown row of"),
    ],
    ids=["unmapped_column", "unmapped_row", "unknown_experiment", "row_not_printed", "column_not_printed",
         "typo_key", "typo_experiment_key", "metric_not_a_string", "expected_missing", "misspelled_task",
         "misspelled_task_in_mean", "misspelled_metric", "ablation_varies_no_label", "ablation_reference_no_row"],
)
def test_spec_errors_name_file_and_key(workspace, change, key, detail):
    path = edit_spec(workspace, change)
    with pytest.raises(InputError) as error:
        load_spec(path)
    message = str(error.value)
    assert str(path) in message
    assert key in message
    assert detail in message


def _scored_another_way(document):
    """Row meru: tiny_clip reading zs_cifar100 where the columns read zs_cifar10; column tau: tiny_meru's."""
    table = document["tables"]["table1"]
    table["rows"]["meru"] = {"experiment": "tiny_clip", "tasks": {"zs_cifar10": "zs_cifar100"}}
    table["columns"]["tau"]["experiment"] = "tiny_meru"


def test_a_row_can_read_other_tasks_and_a_column_another_experiment(workspace):
    spec = load_spec(edit_spec(workspace, _scored_another_way))
    assert table_needs(spec, "table1") == {("tiny_clip", "zs_cifar10"), ("tiny_clip", "zs_cifar100"),
                                           ("tiny_meru", "hierarcaps")}
    frame = compare_table(spec, "table1", write_metrics(workspace, "full"), "full").set_index(["row", "column"])
    clip, meru = OURS["tiny_clip"], OURS["tiny_meru"]
    expected = {("clip", "acc_a"): clip["zs_cifar10"]["top1"], ("clip", "acc_b"): clip["zs_cifar100"]["top1"],
                ("clip", "tau"): meru["hierarcaps"]["kendall_tau"], ("clip", "avg"): our_value("tiny_clip", "", "avg"),
                ("meru", "acc_a"): clip["zs_cifar100"]["top1"], ("meru", "acc_b"): clip["zs_cifar100"]["top1"],
                ("meru", "tau"): meru["hierarcaps"]["kendall_tau"], ("meru", "avg"): clip["zs_cifar100"]["top1"]}
    for cell, value in expected.items():
        assert frame.loc[cell, "ours"] == pytest.approx(value)
    assert frame.loc[("meru", "acc_a"), "experiment"] == "tiny_clip"
    assert frame.loc[("clip", "tau"), "experiment"] == "tiny_meru"


@pytest.mark.parametrize("change, key, detail", [
    (lambda t: t["rows"].update(meru={"experiment": "tiny_clip", "tasks": {"zs_cifar11": "zs_cifar100"}}),
     "tables.table1.rows.meru.tasks", "unknown task of the columns 'zs_cifar11'"),
    (lambda t: t["rows"].update(meru={"experiment": "tiny_clip", "tasks": {"zs_cifar10": "hierarcaps"}}),
     "tables.table1.rows.meru.tasks (column acc_a)", "unknown metric of task 'hierarcaps' 'top1'"),
    (lambda t: t["columns"]["tau"].update(experiment="tiny_nope"), "tables.table1.columns.tau.experiment",
     "unknown experiment 'tiny_nope'"),
], ids=["renames_a_task_no_column_reads", "renamed_task_lacks_the_metric", "column_of_an_unknown_experiment"])
def test_rows_scored_another_way_are_checked(workspace, change, key, detail):
    path = edit_spec(workspace, lambda document: change(document["tables"]["table1"]))
    with pytest.raises(InputError) as error:
        load_spec(path)
    assert str(path) in str(error.value) and key in str(error.value) and detail in str(error.value)


def test_spec_duplicate_yaml_key_names_line(workspace):
    path = workspace / "replication" / "tiny.yaml"
    lines = path.read_text().splitlines()
    line = lines.index("      clip: tiny_clip")
    lines.insert(line + 1, "      clip: tiny_meru")
    path.write_text("\n".join(lines))
    with pytest.raises(InputError, match=rf"{re.escape(str(path))}:{line + 2}: .*duplicate key 'clip'"):
        load_spec(path)


def test_experiment_ids_unique_across_papers(workspace):
    shutil.copytree(workspace / "expected" / "tiny", workspace / "expected" / "other")
    other = workspace / "replication" / "other.yaml"
    other.write_text((workspace / "replication" / "tiny.yaml").read_text().replace("paper: tiny", "paper: other"))
    with pytest.raises(InputError, match=r"tiny\.yaml: experiments\.tiny_clip: id already declared in .*other\.yaml"):
        load_all_specs(workspace / "replication")
    other.write_text(other.read_text().replace("tiny_", "other_"))
    assert set(load_all_specs(workspace / "replication")) == {"tiny", "other"}


# --- compare ------------------------------------------------------------------------------------


def test_compare_full_scale_joins_and_judges_every_cell(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_metrics(workspace, "full"), "full")
    assert list(zip(frame["row"], frame["column"])) == list(PAPER)
    experiments = {"clip": "tiny_clip", "meru": "tiny_meru"}
    for line in frame.itertuples():
        cell = (line.row, line.column)
        assert line.paper_text == PRINTED[cell]
        assert (math.isnan(line.paper) if PAPER[cell] is None else line.paper == PAPER[cell])
        if line.row == "regionclip":
            assert line.verdict == "external" and math.isnan(line.ours) and math.isnan(line.delta)
            continue
        ours = our_value(experiments[line.row], *cell)
        assert line.ours == pytest.approx(ours, abs=1e-12)
        if PAPER[cell] is None:
            assert math.isnan(line.delta)
        else:
            assert line.delta == pytest.approx(ours - PAPER[cell], abs=1e-12)
    verdicts = dict(zip(zip(frame["row"], frame["column"]), frame["verdict"]))
    assert verdicts == {
        ("clip", "acc_a"): "within",  # 51.0 - 50.0 = 1.0, exactly the tolerance
        ("clip", "acc_b"): "outside",  # 29.49 - 30.5 = -1.01
        ("clip", "tau"): "within",  # 0.86 - 0.84 = 0.020000000000000018: the column's tolerance, up to float error
        ("clip", "avg"): "within",  # (51.0 + 29.49) / 2 - 40.2 = 0.045
        ("meru", "acc_a"): "within",  # 32.2 - 31.2 = 1.0000000000000036: the tolerance, up to float error
        ("meru", "acc_b"): "no_paper_value",  # printed "-"
        ("meru", "tau"): "outside",  # -0.03: outside the column's 0.02, though within the table's 1.0
        ("meru", "avg"): "no_paper_value",  # printed "dnc"
        ("regionclip", "acc_a"): "external", ("regionclip", "acc_b"): "external",
        ("regionclip", "tau"): "external", ("regionclip", "avg"): "external",
    }
    clip_tau = frame[(frame["row"] == "clip") & (frame["column"] == "tau")].iloc[0]
    assert clip_tau.tolerance == 0.02 and clip_tau.task == "hierarcaps" and clip_tau.metric == "kendall_tau"
    clip_avg = frame[(frame["row"] == "clip") & (frame["column"] == "avg")].iloc[0]
    assert clip_avg.task == "mean(zs_cifar10,zs_cifar100)" and clip_avg.date == "2026-11-22T00:04:00+00:00"
    assert set(frame.loc[frame["row"] == "meru", "config_hash"]) == {HASHES["tiny_meru"]}


def test_compare_smoke_scale_is_not_comparable_but_shows_numbers(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    smoke = compare_table(spec, "table1", write_metrics(workspace, "smoke"), "smoke")
    full = compare_table(spec, "table1", write_metrics(workspace, "full"), "full")
    expected = full["verdict"].replace({"within": "not_comparable", "outside": "not_comparable"})
    assert list(smoke["verdict"]) == list(expected)
    pd.testing.assert_series_equal(smoke["ours"], full["ours"])
    pd.testing.assert_series_equal(smoke["delta"], full["delta"])


def test_compare_missing_json_is_missing(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_metrics(workspace, "full", skip={("tiny_clip", "zs_cifar100"), ("tiny_meru", "hierarcaps")})
    frame = compare_table(spec, "table1", metrics_dir, "full").set_index(["row", "column"])
    assert frame.loc[("clip", "acc_b"), "verdict"] == "missing"
    assert frame.loc[("clip", "avg"), "verdict"] == "missing"  # the mean needs zs_cifar100 too
    assert frame.loc[("meru", "tau"), "verdict"] == "missing"
    assert math.isnan(frame.loc[("clip", "avg"), "ours"])
    assert frame.loc[("clip", "acc_a"), "verdict"] == "within"


@pytest.mark.parametrize(
    "corrupt, detail",
    [
        (lambda record: record["metrics"].clear(), "no metrics"),
        (lambda record: record["metrics"].update(top1=float("nan")), "not a finite number"),
        (lambda record: record["metrics"].update(top1=-5), "'top1' is -5, outside [0, 100] for a percent"),
        (lambda record: record["metrics"].update(top1=2100), "'top1' is 2100, outside [0, 100] for a percent"),
        (lambda record: record["metrics"].update(top1="51"), "'top1' is '51', not a finite number"),
        (lambda record: record.update(scale="full"), "scale is 'full'"),
        (lambda record: record.pop("provenance"), "provenance"),
    ],
    ids=["metrics_empty", "nan", "negative", "over_100", "string", "wrong_scale", "no_provenance"],
)
def test_compare_bad_metric_json_names_file(workspace, corrupt, detail):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_metrics(workspace, "smoke")
    path = metrics_dir / "tiny_clip" / "zs_cifar10.json"
    record = json.loads(path.read_text())
    corrupt(record)
    path.write_text(json.dumps(record))
    with pytest.raises(InputError) as error:
        compare_table(spec, "table1", metrics_dir, "smoke")
    assert str(path) in str(error.value) and detail in str(error.value)


def test_compare_csv_round_trip_keeps_tokens(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_metrics(workspace, "full"), "full")
    path = workspace / "results" / "full" / "tables" / "tiny" / "table1.csv"
    write_compare_csv(frame, path)
    back = read_compare_csv(path)
    assert list(back["paper_text"]) == list(PRINTED.values())  # "-", "dnc" and "n/a" stay text
    pd.testing.assert_frame_equal(back, frame)


# --- report -------------------------------------------------------------------------------------


def parse_section(markdown: str, heading: str) -> dict[str, list[str]]:
    """The markdown table under `## heading`: first label cell -> value cells (the last four columns)."""
    lines = markdown.split(f"## {heading}\n\n", 1)[1].splitlines()
    table = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        table[cells[0].replace("\\", "")] = cells[-4:]
    return table


def strip_marks(text: str) -> str:
    """A rendered paper cell without bold/underline markup."""
    return text.replace("**", "").replace("<u>", "").replace("</u>", "")


@pytest.mark.parametrize("scale", ["smoke", "pilot", "full"])
def test_report_shows_every_paper_and_measured_number(workspace, scale):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_metrics(workspace, scale), scale)
    out = workspace / "reports" / "tiny" / "table1.md"
    also = workspace / "reports" / "table1.md"
    write_report(spec, "table1", frame, out, also=[also])
    markdown = out.read_text()
    assert ("SMOKE SCALE" in markdown) == (scale == "smoke") and ("PILOT SCALE" in markdown) == (scale == "pilot")
    if scale == "smoke":
        assert SMOKE_BANNER in markdown
    elif scale == "pilot":
        assert PILOT_BANNER in markdown and "**Paper scale**" not in markdown
    else:
        assert "**Paper scale**" in markdown
    assert "±1 absolute" in markdown and "`tau` ±0.02" in markdown
    counts = frame["verdict"].value_counts()
    for verdict, count in counts.items():
        assert f"{count} {verdict.replace('_', ' ')}" in markdown
    assert all(hash_ in markdown for hash_ in HASHES.values()) and "c0ffee" in markdown
    assert "RegionCLIP is not trained by this suite" in markdown and "boxes as extra samples" in markdown

    labels = {"clip": "CLIP", "meru": "MERU*", "regionclip": "RegionCLIP"}
    columns = ["acc_a", "acc_b", "tau", "avg"]
    paper = parse_section(markdown, "Paper (as printed)")
    ours = parse_section(markdown, "Ours")
    delta = parse_section(markdown, "Difference (ours − paper) and verdict")
    assert paper["CLIP"][0] == "**50.0**" and paper["MERU*"][0] == "<u>31.2</u>"
    assert paper["RegionCLIP"][0] == "**<u>40.1</u>**"
    lines = frame.set_index(["row", "column"])
    for row, label in labels.items():
        for index, column in enumerate(columns):
            assert strip_marks(paper[label][index]) == PRINTED[(row, column)]
            line = lines.loc[(row, column)]
            if line.verdict == "external":
                assert ours[label][index] == "ext." and delta[label][index] == "ext."
                continue
            places = 3 if column == "tau" else 2  # one more decimal than the paper prints
            assert float(ours[label][index]) == pytest.approx(line.ours, abs=0.5 * 10 ** -places)
            assert len(ours[label][index].partition(".")[2]) == places
            if math.isnan(line.delta):
                assert delta[label][index] == "n/p"
            else:
                number, marker = delta[label][index].split(" ")
                assert float(number) == pytest.approx(line.delta, abs=0.5 * 10 ** -places)
                assert marker in {"within": "●", "outside": "▲▼◆", "not_comparable": "n/c"}[line.verdict]

    png = out.with_suffix(".png")
    assert "(table1.png)" in markdown and "(tiny/table1.png)" in also.read_text()
    page = out.with_suffix(".html").read_text()  # the HTML page of the same report, its plot embedded
    assert "<h1>tiny table1" in page and "data:image/png;base64," in page and "table1.png" not in page
    with Image.open(png) as image:
        image.verify()
        assert image.format == "PNG"
    with Image.open(png) as image:
        assert image.width > 400 and image.height > 200
        assert len(numpy.unique(numpy.asarray(image.convert("L")))) > 10  # something was drawn


def test_report_renders_before_anything_is_evaluated(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", workspace / "no_metrics_yet", "smoke")
    assert frame["verdict"].value_counts().to_dict() == {"missing": 8, "external": 4}
    out = workspace / "reports" / "tiny" / "table1.md"
    write_report(spec, "table1", frame, out)
    ours = parse_section(out.read_text(), "Ours")
    assert ours["CLIP"] == ["? not run yet"] * 4 and ours["RegionCLIP"] == ["ext."] * 4
    with Image.open(out.with_suffix(".png")) as image:
        assert image.format == "PNG"


def test_a_missing_cell_shows_its_reason_in_the_report(workspace):
    """The plan's reasons (blockers) reach the cells of Ours and Difference and the summary the index copies."""
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    skip = {("tiny_clip", "hierarcaps"), *(("tiny_meru", task) for task in OURS["tiny_meru"])}
    metrics_dir = write_metrics(workspace, "smoke", skip=skip)
    blockers = Blockers({"tiny_meru": "needs weights from outside"}, {})
    frame = compare_table(spec, "table1", metrics_dir, "smoke", blockers=blockers)
    assert dict(zip(frame["row"] + "." + frame["column"], frame["reason"])) == {
        "clip.acc_a": "", "clip.acc_b": "", "clip.tau": "not run yet", "clip.avg": "",
        **{f"meru.{column}": "needs weights from outside" for column in ("acc_a", "acc_b", "tau", "avg")},
        **{f"regionclip.{column}": "" for column in ("acc_a", "acc_b", "tau", "avg")}}
    out = workspace / "reports" / "tiny" / "table1.md"
    write_report(spec, "table1", frame, out)
    markdown = out.read_text()
    ours, delta = parse_section(markdown, "Ours"), parse_section(markdown, "Difference (ours − paper) and verdict")
    assert ours["MERU*"] == delta["MERU*"] == ["? needs weights from outside"] * 4
    assert ours["CLIP"][2] == delta["CLIP"][2] == "? not run yet"
    assert "12 cells: 3 not comparable, 5 missing (1 not run yet, 4 needs weights from outside), 4 external." in markdown


def test_report_rejects_a_stale_compare_table(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_metrics(workspace, "smoke"), "smoke")
    with pytest.raises(InputError, match="stale.csv: cells do not match"):
        write_report(spec, "table1", frame.iloc[1:], workspace / "r.md", source="stale.csv")


def test_cli_compare_report_index(workspace):
    metrics_dir = write_metrics(workspace, "smoke", skip={("tiny_meru", "zs_cifar10")})
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(required=True))
    spec = str(workspace / "replication" / "tiny.yaml")
    csv_path = workspace / "results" / "smoke" / "tables" / "tiny" / "table1.csv"
    reports = workspace / "reports"
    (reports / "claims.md").parent.mkdir(parents=True)
    (reports / "claims.md").write_text("# Claims\n")
    (reports / "coverage.md").write_text("# Coverage\n")
    for argv in (
        ["compare", "--spec", spec, "--table", "table1", "--metrics-dir", str(metrics_dir), "--scale", "smoke",
         "--out", str(csv_path), "--blockers", '{"tasks": {"zs_cifar10": "needs data the scale lacks"}}'],
        ["report", "--spec", spec, "--table", "table1", "--compare-csv", str(csv_path),
         "--out", str(reports / "tiny" / "table1.md")],
        ["index", "--reports-dir", str(reports), "--tables-dir", str(csv_path.parent.parent),
         "--out", str(reports / "index.md")],
        ["html", "--markdown", str(reports / "index.md"), "--out", str(reports / "index.html")],
    ):
        args = parser.parse_args(argv)
        args.func(args)
    verdicts = read_compare_csv(csv_path)["verdict"].value_counts().to_dict()
    assert verdicts == {"not_comparable": 5, "external": 4, "missing": 2, "no_paper_value": 1}
    index = (reports / "index.md").read_text()
    assert "(claims.md)" in index and "[Coverage](coverage.md)" in index
    assert "[tiny table1: Zero-shot classification and hierarchy](tiny/table1.md)" in index
    assert ("(smoke scale): 12 cells: 5 not comparable, 1 no paper value, 2 missing (2 needs data the scale lacks), "
            "4 external." in index)
    page = (reports / "index.html").read_text()  # the index's page leads to the reports' pages
    assert 'href="tiny/table1.html"' in page and 'href="claims.html"' in page and ".md\"" not in page
    agreement = next(line for line in index.splitlines() if line.startswith("| tiny"))  # the paper's counts
    assert [cell.strip() for cell in agreement.split("|")[1:-1]] == ["tiny", "0", "0", "0", "5", "2", "12"]
    args = parser.parse_args(["compare", "--spec", spec, "--table", "table7", "--metrics-dir", str(metrics_dir),
                              "--scale", "smoke", "--out", str(csv_path)])
    with pytest.raises(InputError, match=r"tiny\.yaml: no table 'table7'"):
        args.func(args)


# --- provenance ---------------------------------------------------------------------------------


def test_config_hash_is_sha256_of_canonical_json():
    canonical = b'{"a":1,"b":[1,2],"c":{"d":"\xc3\xa9"}}'
    assert config_hash({"c": {"d": "é"}, "b": [1, 2], "a": 1}) == hashlib.sha256(canonical).hexdigest()[:12]
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_provenance_record():
    record = provenance("abc123def456", 2.5)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True)
    assert record["git_commit"] == (head.stdout.strip() if head.returncode == 0 else "unknown")
    date = datetime.datetime.fromisoformat(record["date"])
    assert date.utcoffset() == datetime.timedelta(0)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - date).total_seconds()) < 60
    assert record["packages"]["numpy"] == numpy.__version__
    assert set(record["packages"]) == {"torch", "timm", "open_clip", "numpy", "hypvl"}
    assert record["config_hash"] == "abc123def456" and record["seconds"] == 2.5



def test_column_scale_converts_our_units_to_the_printed_ones(workspace):
    """A paper printing a percentage metric as a fraction (HierarCaps) maps the column with scale 0.01."""
    path = edit_spec(workspace, lambda doc: doc["tables"]["table1"]["columns"]["acc_a"].update(scale=0.01))
    metrics_dir = write_metrics(workspace, "full")
    frame = compare_table(load_spec(path, workspace / "expected"), "table1", metrics_dir, "full").set_index(
        ["row", "column"])
    assert frame.loc[("clip", "acc_a"), "ours"] == pytest.approx(0.51)
    assert frame.loc[("clip", "acc_a"), "delta"] == pytest.approx(0.51 - 50.0)
    assert frame.loc[("clip", "acc_b"), "ours"] == pytest.approx(29.49)  # other columns unscaled


def test_a_column_may_average_means_of_other_metrics_and_name_its_readings(workspace):
    """avg read two ways, by hand for clip: `nested` = mean(mean(cifar10 top1, cifar100 top1), hierarcaps tau)
    = ((51.0 + 29.49) / 2 + 0.86) / 2 = 20.5525; `single` = cifar100 top1 = 29.49."""
    nested = {"mean_of": [{"mean_of": ["zs_cifar10", "zs_cifar100"], "metric": "top1"},
                          {"task": "hierarcaps", "metric": "kendall_tau"}]}
    metrics_dir = write_metrics(workspace, "full")
    for reading, tasks, label, metric, ours in (
            ("nested", ("zs_cifar10", "zs_cifar100", "hierarcaps"),
             "mean(mean(zs_cifar10.top1,zs_cifar100.top1),hierarcaps.kendall_tau)", "", 20.5525),
            ("single", ("zs_cifar100",), "zs_cifar100", "top1", 29.49)):
        path = edit_spec(workspace, lambda doc: doc["tables"]["table1"]["columns"].update(avg={
            "readings": {"nested": nested, "single": {"task": "zs_cifar100", "metric": "top1"}}, "reading": reading}))
        spec = load_spec(path)
        column = spec.table("table1").columns["avg"]
        assert (column.reading, list(column.readings), column.tasks) == (reading, ["nested", "single"], tasks)
        line = compare_table(spec, "table1", metrics_dir, "full").set_index(["row", "column"]).loc[("clip", "avg")]
        assert (line.task, line.metric) == (label, metric) and line.ours == pytest.approx(ours, abs=1e-12)


def test_a_metric_the_task_did_not_compute_is_a_missing_cell(workspace):
    """e.g. a VL-CheckList group the data lacks: the JSON is valid, the cell is missing, not an error."""
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_metrics(workspace, "full")
    path = metrics_dir / "tiny_clip" / "zs_cifar10.json"
    record = json.loads(path.read_text())
    record["metrics"] = {"other": 1.0}
    path.write_text(json.dumps(record))
    frame = compare_table(spec, "table1", metrics_dir, "full").set_index(["row", "column"])
    assert frame.loc[("clip", "acc_a"), "verdict"] == "missing"
    assert frame.loc[("clip", "acc_b"), "verdict"] == "outside"  # 29.49 vs 30.5: the other cells still compare


# --- several seeds per row (config `seeds`) ------------------------------------------------------

CIFAR10_BY_SEED = {3: 51.0, 4: 49.0, 5: 53.4}  # tiny_clip's zs_cifar10 top1 per seed (3: declared)


def write_seed_variants(root: Path, scale: str, seeds=(4, 5)) -> Path:
    """OURS as metric JSONs, plus tiny_clip's seed variants (`tiny_clip__seed<N>`): the same numbers but
    zs_cifar10, which takes CIFAR10_BY_SEED."""
    metrics_dir = write_metrics(root, scale)
    for seed in seeds:
        for task in OURS["tiny_clip"]:
            record = json.loads((metrics_dir / "tiny_clip" / f"{task}.json").read_text())
            record["experiment"] = f"tiny_clip__seed{seed}"
            if task == "zs_cifar10":
                record["metrics"] = {"top1": CIFAR10_BY_SEED[seed]}
            path = metrics_dir / record["experiment"] / f"{task}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record))
    return metrics_dir


def test_a_row_with_several_seeds_is_their_mean_with_their_spread(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_seed_variants(workspace, "full")
    frame = compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [3, 4, 5]}).set_index(["row", "column"])
    values = numpy.array(list(CIFAR10_BY_SEED.values()))
    acc_a = frame.loc[("clip", "acc_a")]
    assert acc_a["ours"] == pytest.approx(values.mean()) and acc_a["n_seeds"] == 3
    assert acc_a["spread"] == pytest.approx(values.std(ddof=1))  # sample standard deviation, numpy as the oracle
    # 51.13 - 50.0 is outside the tolerance 1.0, but within 2 standard deviations (2 x 2.20) of the seeds
    assert acc_a["verdict"] == "within_seed_spread"
    acc_b = frame.loc[("clip", "acc_b")]  # every seed measured 29.49: no spread, so -1.01 stays outside
    assert acc_b["spread"] == 0 and acc_b["verdict"] == "outside"
    assert frame.loc[("clip", "avg"), "ours"] == pytest.approx(((values + 29.49) / 2).mean())
    assert frame.loc[("meru", "acc_a"), "n_seeds"] == 1 and math.isnan(frame.loc[("meru", "acc_a"), "spread"])
    only_others = compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [4, 5]})
    assert only_others.loc[0, "ours"] == pytest.approx((49.0 + 53.4) / 2)  # the declared seed 3 is not among them
    smoke = compare_table(spec, "table1", write_seed_variants(workspace, "smoke"), "smoke", seeds={"tiny_clip": [3, 4, 5]})
    assert smoke.loc[0, "verdict"] == "not_comparable"  # a smoke number never gets a tolerance verdict


def test_a_seeded_row_lacking_one_seed_is_missing_and_seeds_must_name_rows(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_seed_variants(workspace, "full", seeds=(4,))
    frame = compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [3, 4, 5]}).set_index(["row", "column"])
    assert (frame.loc["clip", "verdict"] == "missing").all()
    with pytest.raises(InputError, match=r"--seeds: 'tiny_other' is not the experiment of a row of .*tiny\.yaml"):
        compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_other": [3, 4]})


def test_the_report_shows_mean_and_spread_of_a_seeded_row(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    frame = compare_table(spec, "table1", write_seed_variants(workspace, "full"), "full", seeds={"tiny_clip": [3, 4, 5]})
    path = workspace / "table1.csv"
    write_compare_csv(frame, path)
    pd.testing.assert_frame_equal(read_compare_csv(path), frame)  # n_seeds and spread survive the CSV
    out = workspace / "reports" / "tiny" / "table1.md"
    write_report(spec, "table1", read_compare_csv(path), out)
    markdown = out.read_text()
    values = numpy.array(list(CIFAR10_BY_SEED.values()))
    ours = parse_section(markdown, "Ours")
    assert ours["CLIP"][0] == f"{values.mean():.2f} ± {values.std(ddof=1):.2f}"  # the paper prints one decimal
    assert ours["MERU*"][0] == "32.20"
    assert "over the seeds of the rows trained with several (config `seeds`): `clip` (3 seeds)." in markdown
    assert parse_section(markdown, "Difference (ours − paper) and verdict")["CLIP"][0] == "+1.13 ◐"
    metrics_dir = write_seed_variants(workspace, "full")
    shutil.rmtree(metrics_dir / "tiny_meru")  # the only other row with numbers
    write_report(spec, "table1", compare_table(spec, "table1", metrics_dir, "full", seeds={"tiny_clip": [3, 4, 5]}), out)
    assert "Mean ± standard deviation over 3 seeds in every measured row (config `seeds`)." in out.read_text()


def test_regression_leaves_seed_variants_unpinned(workspace):
    from hypvl.replication.regression import load_policy, measured_values

    metrics_dir = write_seed_variants(workspace, "smoke")
    measured = measured_values(metrics_dir, "smoke", load_policy(REPO / "baselines" / "tolerances.yaml"))
    assert set(measured["experiment"]) == {"tiny_clip", "tiny_meru"}


# --- one run config per table ------------------------------------------------------------------

RUN_CONFIG = {"scale": "full", "model": {"embed_dim": 512}, "train": {"steps": 500, "lr": 5e-4}, "eval": {}}


def stamp(metrics_dir: Path, **fields) -> None:
    """Add `fields` to the provenance of every metric JSON under metrics_dir."""
    for path in metrics_dir.glob("*/*.json"):
        record = json.loads(path.read_text())
        record["provenance"].update(fields)
        path.write_text(json.dumps(record))


def test_compare_refuses_to_join_numbers_of_two_run_configs_and_names_what_differs(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_metrics(workspace, "full")
    stamp(metrics_dir, run_config=RUN_CONFIG, run_config_hash=config_hash(RUN_CONFIG))
    compare_table(spec, "table1", metrics_dir, "full")  # one config: joined
    odd = metrics_dir / "tiny_meru" / "hierarcaps.json"
    record = json.loads(odd.read_text())
    other = {**RUN_CONFIG, "train": {"steps": 400, "lr": 5e-4}}
    record["provenance"].update(run_config=other, run_config_hash=config_hash(other))
    odd.write_text(json.dumps(record))
    with pytest.raises(InputError) as error:
        compare_table(spec, "table1", metrics_dir, "full")
    assert str(odd) in str(error.value) and str(metrics_dir / "tiny_clip") in str(error.value)
    assert "train.steps: 500 vs 400" in str(error.value) and "lr" not in str(error.value)
    record["provenance"].pop("run_config")
    record["provenance"].pop("run_config_hash")
    odd.write_text(json.dumps(record))
    with pytest.raises(InputError, match="one records no run config"):
        compare_table(spec, "table1", metrics_dir, "full")


def test_the_report_carries_the_provenance_of_its_numbers(workspace):
    spec = load_spec(workspace / "replication" / "tiny.yaml")
    metrics_dir = write_metrics(workspace, "full")
    stamp(metrics_dir, run_config=RUN_CONFIG, run_config_hash=config_hash(RUN_CONFIG), git_dirty=False,
          packages={"torch": "9.9", "numpy": "1.0"}, data_manifest_hash="d" * 64)
    for experiment, digest in (("tiny_clip", "1" * 64), ("tiny_meru", "2" * 64)):
        for path in (metrics_dir / experiment).glob("*.json"):
            record = json.loads(path.read_text())
            record["provenance"]["checkpoint_sha256"] = digest
            path.write_text(json.dumps(record))
    out = workspace / "table1.md"
    write_report(spec, "table1", compare_table(spec, "table1", metrics_dir, "full"), out)
    section = out.read_text().split("## Provenance", 1)[1]
    assert f"`{config_hash(RUN_CONFIG)}`" in section
    assert "`c0ffee`; uncommitted changes: no" in section
    assert "packages: numpy=1.0 torch=9.9" in section
    assert f"data manifest (sha256): `{'d' * 12}`" in section
    assert f"checkpoints (sha256): clip `{'1' * 12}`; meru `{'2' * 12}`" in section
