"""Replication specs: loaded in printed order with externals and needs; every error names the file and the key; rows
scored another way checked; duplicate YAML keys and experiment ids across papers refused."""

import re
import shutil

import pytest

from helpers.replication_fixture import OURS, edit_spec, our_value, write_metrics
from hypvl.errors import InputError
from hypvl.replication.compare import compare_table
from hypvl.spec.load import load_all_specs, load_spec
from hypvl.spec.paper import table_needs
from hypvl.spec.tables import External


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
