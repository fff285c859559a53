"""Replication layer: compare (join, deltas, verdicts, units, run configs) and provenance records; the specs' own
validation: test_replication_spec.py."""

import datetime
import hashlib
import json
import math
import subprocess
from pathlib import Path

import numpy
import pandas as pd
import pytest

from helpers.replication_fixture import HASHES, PAPER, PRINTED, RUN_CONFIG, edit_spec, our_value, stamp, write_metrics
from hypvl.errors import InputError
from hypvl.provenance import config_hash, provenance
from hypvl.replication.compare import compare_table, read_compare_csv, write_compare_csv
from hypvl.spec.load import load_spec


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


# --- one run config per table ------------------------------------------------------------------

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
