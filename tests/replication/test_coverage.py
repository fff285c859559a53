"""Coverage: every printed cell computed, external, or missing with the plan's reason (`hypvl coverage`, reports).

A toy spec has one row per reason kind; its reasons must follow the plan (a cell turns computed once the plan makes
its model and its metric is written, with no change to the coverage code), and the real specs must leave no cell
of MERU, HyCoCLIP, PoinCLIP or syntax-VSE "not built".
"""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from hypvl.cli import main
from hypvl.config import load_config
from hypvl.workflow.coverage import cell_kind, coverage_frames
from hypvl.errors import InputError
from hypvl.replication.coverage import Blockers, NEEDS_DATA, NEEDS_WEIGHTS, NOT_BUILT, NOT_RUN
from hypvl.workflow import Plan

EXPECTED = REPO / "tests" / "data" / "coverage" / "expected"  # cov/table1.csv: a row per reason, columns a-d


def _exp(method="clip", data="grit", source="train", **overrides):
    return {"method": method, "backbone": "vit_s16", "data": data, "source": source,
            **({"overrides": overrides} if overrides else {})}


SPEC = {
    "paper": "cov",
    "title": "Coverage",
    "experiments": {
        "cov_done": _exp(),
        "cov_fresh": _exp("meru"),
        "cov_released": _exp("meru", source="released:meru_vit_s"),
        "cov_unbuilt": _exp("atmg"),  # a method no module builds
        "cov_unread": _exp("meru", patch_dropout=0.5),
        "cov_nodata": _exp(data="laion2b"),
        "cov_start": _exp("meru", init_from="cov_released", freeze_encoders=True),
        "cov_beside": _exp("meru", source="released:meru_vit_b"),
    },
    "tables": {"table1": {
        "title": "Coverage", "expected": "table1.csv", "tolerance": 1.0,
        "rows": {"done": "cov_done", "fresh": "cov_fresh", "released": "cov_released", "unbuilt": "cov_unbuilt",
                 "unread": "cov_unread", "nodata": "cov_nodata", "start": "cov_start",
                 "quoted": {"external": "numbers quoted from another paper"}},
        "columns": {"a": {"task": "zs_cifar10", "metric": "top1"},
                    "b": {"task": "vlc_object", "metric": "size_small"},
                    "c": {"mean_of": ["zs_cifar10", "zs_cifar100"], "metric": "top1"},
                    "d": {"external": "not an evaluation"}},
        "released": {"unbuilt": "cov_beside"},  # a released checkpoint beside a row we cannot train: no stand-in
    }},
}
# row -> the kind of its cells a, b, c (d is an external column)
KINDS = {
    "done": ("computed", NEEDS_DATA, "computed"),  # vlc_object ran without writing size_small (no such group here)
    "fresh": (NOT_RUN,) * 3,
    "released": (NEEDS_WEIGHTS,) * 3,
    "unbuilt": (NOT_BUILT,) * 3,  # a method the suite does not build
    "unread": (NOT_BUILT,) * 3,  # an override nothing reads
    "nodata": (NEEDS_DATA,) * 3,  # a training corpus the config lacks
    "start": (NEEDS_WEIGHTS,) * 3,  # starts from released weights
    "quoted": ("external",) * 3,
    "unbuilt__released": (NEEDS_WEIGHTS,) * 3,
}


def write_metric(metrics_dir: Path, experiment: str, task: str, metrics: dict) -> None:
    path = metrics_dir / experiment / f"{task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"experiment": experiment, "task": task, "scale": "smoke", "metrics": metrics,
                                "provenance": {"config_hash": "c", "git_commit": "g", "date": "2026-01-01"}}))


@pytest.fixture
def toy(tmp_path):
    """A config file for the toy spec, results and reports under tmp_path, cov_done's metrics written."""
    replication = tmp_path / "replication"
    replication.mkdir()
    (replication / "cov.yaml").write_text(yaml.safe_dump(SPEC))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "results_dir": str(tmp_path / "results"), "reports_dir": str(tmp_path / "reports"),
        "replication_dir": str(replication), "expected_dir": str(EXPECTED)}))
    metrics = tmp_path / "results" / "metrics"
    write_metric(metrics, "cov_done", "zs_cifar10", {"top1": 40.0})
    write_metric(metrics, "cov_done", "zs_cifar100", {"top1": 20.0})
    write_metric(metrics, "cov_done", "vlc_object", {"accuracy": 55.0})
    return config, metrics


def kinds(frame) -> dict[str, tuple[str, ...]]:
    """row -> the kinds of its cells a, b, c."""
    by_cell = {(line.row, line.column): cell_kind(line) for line in frame.itertuples(index=False)}
    assert {by_cell[(row, "d")] for row in KINDS} == {"external"}
    return {row: tuple(by_cell[(row, column)] for column in "abc") for row in KINDS}


def test_each_missing_cell_has_the_plans_reason(toy):
    config, metrics = toy
    plan = Plan(load_config([config]))
    assert plan.reports.blockers("cov", "table1") == Blockers(
        {"cov_released": NEEDS_WEIGHTS, "cov_start": NEEDS_WEIGHTS, "cov_unbuilt": NOT_BUILT,
         "cov_unread": NOT_BUILT, "cov_nodata": NEEDS_DATA, "cov_beside": NEEDS_WEIGHTS}, {})
    frame = coverage_frames(plan, metrics)[("cov", "table1")]
    assert kinds(frame) == KINDS
    done = frame.set_index(["row", "column"]).loc[("done", "c")]
    assert done.ours == 30.0 and done.reason == ""  # (40 + 20) / 2; a computed cell has no reason


def test_reasons_follow_the_plan_with_no_change_to_coverage(toy):
    """When a branch makes the plan obtain outside weights (here: a Plan that counts every source as runnable),
    those cells are not run yet, then computed once their metrics are written."""
    config, metrics = toy

    class Obtaining(Plan):
        def runnable(self, experiment):
            return super().runnable(experiment) or self.experiment(experiment).source.startswith("released:")

    plan = Obtaining(load_config([config]))
    assert kinds(coverage_frames(plan, metrics)[("cov", "table1")])["released"] == (NOT_RUN,) * 3
    write_metric(metrics, "cov_released", "zs_cifar10", {"top1": 30.0})
    write_metric(metrics, "cov_released", "zs_cifar100", {"top1": 10.0})
    after = kinds(coverage_frames(plan, metrics)[("cov", "table1")])
    assert after["released"] == ("computed", NOT_RUN, "computed")
    assert after["start"] == (NOT_RUN,) * 3  # its start is obtainable now


def test_hypvl_coverage_lists_every_table_with_counts_and_reasons(toy, capsys):
    config, _ = toy
    out = config.parent / "reports" / "coverage.md"
    assert main(["coverage", "--configfile", str(config), "--scale", "smoke", "--out", str(out)]) == 0
    text = " ".join(out.read_text().split())  # markdown tables with their padding collapsed
    assert ("**All tables**: 36 cells: 2 computed, 12 external, 22 missing (3 not run yet, 9 needs weights from "
            "outside, 4 needs data the scale lacks, 6 not built).") in text
    assert "| cov | [table1](cov/table1.md) | 36 | 2 | 12 | 3 | 9 | 4 | 6 |" in text  # links from reports/
    assert "`unbuilt__released` (`cov_beside`)" in text
    assert "| not built | `unbuilt` (`cov_unbuilt`), `unread` (`cov_unread`) | all 3 |" in text
    assert "| needs data the scale lacks | `done` (`cov_done`) | `b` |" in text
    assert "External: row `quoted`: numbers quoted from another paper; column `d`: not an evaluation." in text
    assert main(["coverage", "--configfile", str(config)]) == 0
    assert capsys.readouterr().out.startswith("# Coverage")  # printed where there is no --out


def test_coverage_at_another_scale_than_the_config_is_refused(toy, capsys):
    config, _ = toy
    assert main(["coverage", "--configfile", str(config), "--scale", "full"]) == 1
    assert "--scale full: the config is at scale 'smoke'" in capsys.readouterr().err


def test_hypvl_coverage_imports_no_torch(toy):
    config, _ = toy
    out = config.parent / "c.md"
    code = ("import sys; from hypvl.cli import main; "
            f"assert main(['coverage', '--configfile', {str(config)!r}, '--out', {str(out)!r}]) == 0; "
            "print(sorted(m for m in ('torch', 'timm', 'open_clip') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_blockers_round_trip_and_bad_json_is_one_clear_error():
    blockers = Blockers({"e": NOT_BUILT}, {"t": NEEDS_DATA})
    assert Blockers.from_json(blockers.to_json()) == blockers
    for text, problem in (("{", "not valid JSON"), ('{"rows": {}}', "expected a JSON object"),
                          ('{"tasks": {"t": "later"}}', "tasks must map ids to reasons")):
        with pytest.raises(InputError, match=problem):
            Blockers.from_json(text)


def test_no_cell_of_the_four_built_papers_is_not_built_and_every_trained_experiment_is_runnable():
    plan = Plan(load_config())
    for paper in ("meru", "hycoclip", "poinclip", "syntax_vse"):
        spec = plan.specs[paper]
        assert all(plan.runnable(exp) for exp, e in spec.experiments.items() if e.source == "train"), paper
        for table in spec.tables:
            assert NOT_BUILT not in plan.reports.blockers(paper, table).experiments.values(), (paper, table)


def test_the_coverage_job_plans_with_the_workflows_whole_config(toy):
    """reports/coverage.md judges with the plan of the workflow's config (weights held locally, stand-ins...)."""
    config, _ = toy
    fetched = config.parent / "fetched.yaml"  # no smoke stand-ins: outside weights are fetched
    fetched.write_text(yaml.safe_dump({"weights": {"standins": None}}))
    plan = Plan(load_config([config, fetched]))
    assert plan.blocker("cov_released") is None  # obtainable now
    assert load_config(config_json=shlex.split(plan.step_config("coverage"))) == plan.config


def test_coverage_links_the_flagship_report_where_only_it_was_made(tmp_path):
    """HyCoCLIP's tables are also made at the top of reports/ (the flagship target, reports/table1.md): coverage
    links that one where reports/hycoclip/table1.md was not made, and the latter where it was."""
    from hypvl.workflow.coverage import _report_of

    plan = Plan(load_config(config_json=[json.dumps({"reports_dir": str(tmp_path)})]))
    assert _report_of(plan, "hycoclip", "table1") == tmp_path / "hycoclip" / "table1.md"  # neither made: the target
    (tmp_path / "table1.md").write_text("# flagship")
    assert _report_of(plan, "hycoclip", "table1") == tmp_path / "table1.md"
    assert _report_of(plan, "meru", "table1") == tmp_path / "meru" / "table1.md"  # MERU has no flagship target
    (tmp_path / "hycoclip").mkdir()
    (tmp_path / "hycoclip" / "table1.md").write_text("# table")
    assert _report_of(plan, "hycoclip", "table1") == tmp_path / "hycoclip" / "table1.md"
