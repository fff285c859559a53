"""`hypvl regress`: pinned baselines, tolerances per group, group means, sample counts, re-pinning."""

import json
import subprocess
import sys

import pytest

from helpers import REPO
from hypvl.errors import InputError
from hypvl.replication.regression import check, failures, load_policy, measured_values, read_baseline, update_baseline
from hypvl.tasks import GROUP_MODULES

POLICY = """
groups:
  zeroshot: {atol: 6.0, mean_atol: 2.0}
  hierarchy: {atol: 0.06, metrics: {tie: 0.5}}
  stats: {atol: 0.0, rtol: 0.05}
  retrieval: {atol: 1.0}
  detection: {atol: 1.0}
  scene: {atol: 1.0, mean_atol: 1.0}
  hierarcaps: {atol: 1.0}
  lexical: {atol: 1.0}
  breeds_prompts: {atol: 1.0}
  linprobe: {atol: 1.0}
ignore: [best_c]
"""
SETS = ("zs_cifar10", "zs_dtd", "zs_pets", "zs_food101")


def write_json(metrics_dir, experiment, task, metrics, n_samples=100, scale="smoke"):
    path = metrics_dir / experiment / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"experiment": experiment, "task": task, "scale": scale, "metrics": metrics,
                                "n_samples": n_samples,
                                "provenance": {"config_hash": "abc", "git_commit": "c0ffee", "date": "2026"}}))


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of every markdown table line, stripped of their padding."""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in markdown.splitlines() if line.startswith("|")]


@pytest.fixture
def policy(tmp_path):
    path = tmp_path / "tolerances.yaml"
    path.write_text(POLICY)
    return load_policy(path)


def world(metrics_dir, shift=0.0, tie=1.5, radius=2.0, n=100):
    for i, task in enumerate(SETS):
        write_json(metrics_dir, "exp_a", task, {"top1": 40.0 + i + shift, "mean_per_class_accuracy": 30.0 + i})
    write_json(metrics_dir, "exp_a", "zs_cars", {"top1": 50.0})
    write_json(metrics_dir, "exp_a", "vlc_object", {"accuracy": 60.0, "location": 55.0})
    write_json(metrics_dir, "exp_a", "vlc_attribute", {"accuracy": 50.0})
    write_json(metrics_dir, "exp_a", "hier_imagenet", {"tie": tie, "jaccard": 0.5}, n_samples=n)
    write_json(metrics_dir, "exp_b", "stats_radius", {"image_radius_mean": radius, "best_c": 10.0})


def pinned(tmp_path, policy):
    world(tmp_path / "pin")
    return update_baseline(tmp_path / "smoke.csv", measured_values(tmp_path / "pin", "smoke", policy))


def run_check(tmp_path, policy, whole=False, **change):
    world(tmp_path / "now", **change)
    return check(measured_values(tmp_path / "now", "smoke", policy), read_baseline(tmp_path / "smoke.csv"),
                 policy, "smoke", whole=whole)


def test_pinning_records_values_sample_counts_and_group_means(tmp_path, policy):
    baseline = pinned(tmp_path, policy).set_index(["experiment", "task", "metric"])["value"]
    assert baseline[("exp_a", "zs_dtd", "top1")] == 41.0
    assert baseline[("exp_a", "hier_imagenet", "n_samples")] == 100
    # mean over the group's tasks: (40 + 41 + 42 + 43 + 50) / 5, computed by hand
    assert baseline[("exp_a", "mean:zeroshot", "top1")] == pytest.approx(43.2)
    assert baseline[("exp_a", "mean:scene", "accuracy")] == pytest.approx(55.0)
    assert ("exp_a", "mean:scene", "location") not in baseline.index  # one task reports it: no mean
    assert ("exp_a", "mean:hierarchy", "tie") not in baseline.index  # no mean_atol for this group
    assert ("exp_b", "stats_radius", "best_c") not in baseline.index  # ignored diagnostic


def test_same_numbers_pass(tmp_path, policy):
    pinned(tmp_path, policy)
    checked = run_check(tmp_path, policy, whole=True)
    assert failures(checked).empty and (checked["status"] == "ok").all()


def test_a_uniform_shift_within_cell_tolerance_is_caught_by_the_group_mean(tmp_path, policy):
    pinned(tmp_path, policy)
    checked = run_check(tmp_path, policy, shift=3.75)  # each cell within 6, the mean 3 > 2 away
    bad = failures(checked)
    assert list(zip(bad["task"], bad["metric"])) == [("mean:zeroshot", "top1")]
    assert bad["difference"].iloc[0] == pytest.approx(3.0)  # 4 of the 5 sets moved by 3.75


def test_per_metric_override_relative_tolerance_and_exact_sample_counts(tmp_path, policy):
    pinned(tmp_path, policy)
    assert failures(run_check(tmp_path, policy, tie=1.9)).empty              # 0.4 <= tie's own 0.5
    assert failures(run_check(tmp_path, policy, radius=2.09)).empty          # 0.09 <= 5% of 2.0
    bad = failures(run_check(tmp_path, policy, tie=2.1, radius=2.2, n=99))
    assert set(zip(bad["task"], bad["metric"])) == {
        ("hier_imagenet", "tie"), ("stats_radius", "image_radius_mean"), ("hier_imagenet", "n_samples")}


def test_unpinned_and_missing_values(tmp_path, policy):
    pinned(tmp_path, policy)
    write_json(tmp_path / "now", "exp_c", "zs_dtd", {"top1": 10.0, "mean_per_class_accuracy": 10.0})
    world(tmp_path / "now")
    (tmp_path / "now" / "exp_b" / "stats_radius.json").unlink()
    measured = measured_values(tmp_path / "now", "smoke", policy)
    baseline = read_baseline(tmp_path / "smoke.csv")
    partial = check(measured, baseline, policy, "smoke", whole=False)
    assert set(failures(partial)["status"]) == {"unpinned"}
    assert set(failures(partial)["experiment"]) == {"exp_c"}
    whole = check(measured, baseline, policy, "smoke", whole=True)
    missing = failures(whole)[failures(whole)["status"] == "missing"]
    assert set(missing["task"]) == {"stats_radius"}


def test_update_replaces_remeasured_tasks_and_keeps_the_rest(tmp_path, policy):
    pinned(tmp_path, policy)
    write_json(tmp_path / "again", "exp_a", "zs_dtd", {"top1": 99.0, "mean_per_class_accuracy": 98.0})
    updated = update_baseline(tmp_path / "smoke.csv", measured_values(tmp_path / "again", "smoke", policy))
    values = updated.set_index(["experiment", "task", "metric"])["value"]
    assert values[("exp_a", "zs_dtd", "top1")] == 99.0
    assert values[("exp_a", "zs_pets", "top1")] == 42.0
    assert values[("exp_b", "stats_radius", "image_radius_mean")] == 2.0
    assert not updated.duplicated(["experiment", "task", "metric"]).any()


@pytest.mark.parametrize("text, message", [
    ("experiment,task,value\na,b,1\n", "columns"),
    ("experiment,task,metric,value\na,zs_dtd,top1,\n", "numeric value"),
    ("experiment,task,metric,value\na,zs_dtd,top1,1\na,zs_dtd,top1,2\n", "exactly one"),
])
def test_bad_baseline_is_an_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "smoke.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as error:
        read_baseline(path)
    assert str(path) in str(error.value)


def test_bad_policy_and_foreign_json_are_errors_naming_the_file(tmp_path, policy):
    path = tmp_path / "bad.yaml"
    path.write_text("groups:\n  zeroshot: {atol: 1, tolerance: 2}\n")
    with pytest.raises(InputError, match="zeroshot"):
        load_policy(path)
    write_json(tmp_path / "m", "exp_a", "zs_dtd", {"top1": 1.0}, scale="full")
    with pytest.raises(InputError, match="scale"):
        measured_values(tmp_path / "m", "smoke", policy)


def test_policy_names_exactly_the_suites_task_groups(tmp_path):
    path = tmp_path / "tolerances.yaml"
    path.write_text(POLICY.replace("  detection: {atol: 1.0}\n", ""))
    with pytest.raises(InputError, match=r"no tolerance for the task groups \['detection'\]") as error:
        load_policy(path)
    assert str(path) in str(error.value)
    path.write_text(POLICY.replace("  scene:", "  scenes:"))
    with pytest.raises(InputError, match=r"groups \['scenes'\] are not task groups of the suite") as error:
        load_policy(path)
    assert str(path) in str(error.value)


def test_the_shipped_policy_covers_every_task_group():
    policy = load_policy(REPO / "baselines" / "tolerances.yaml")
    assert set(policy.groups) == set(GROUP_MODULES)


def test_command_writes_report_and_strict_fails_on_drift(tmp_path, policy):
    pinned(tmp_path, policy)
    (tmp_path / "tolerances.yaml").write_text(POLICY)
    world(tmp_path / "now", tie=3.0)
    args = [sys.executable, "-m", "hypvl.cli", "regress", "--metrics-dir", str(tmp_path / "now"), "--scale", "smoke",
            "--baseline", str(tmp_path / "smoke.csv"), "--tolerances", str(tmp_path / "tolerances.yaml"),
            "--out", str(tmp_path / "regression.md")]
    loose = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    assert loose.returncode == 0, loose.stderr
    assert loose.stdout == "" and f"not; see {tmp_path / 'regression.md'}" in loose.stderr  # a status line, logged
    report = (tmp_path / "regression.md").read_text()
    assert report.startswith("# Regression at scale `smoke`: FAIL")
    assert ["exp_a", "hier_imagenet", "tie", "1.5", "3", "1.5", "0.5", "drift"] in table_rows(report)
    assert "Measured at git commit `c0ffee` (uncommitted changes: –), run config –" in report  # what the JSONs record
    strict = subprocess.run([*args, "--strict"], cwd=REPO, capture_output=True, text=True)
    assert strict.returncode == 1
    printed = subprocess.run(args[:-2], cwd=REPO, capture_output=True, text=True)  # no --out: the report is the output
    assert printed.returncode == 0 and printed.stdout.strip() == report.strip()
