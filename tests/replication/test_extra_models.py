"""Extra models (config `extra_models`, hypvl.outside.extras): declared, planned, and compared as rows of their own that give
their numbers and no verdict."""

import json

import pytest

from helpers import REPO
from helpers.replication_fixture import write_metrics
from hypvl.config import load_config
from hypvl.errors import InputError
from hypvl.outside.extras import entry_problem, extra_models, parse_extra
from hypvl.replication.compare import compare_table, read_compare_csv, write_compare_csv
from hypvl.replication.coverage import Blockers, NOT_RUN
from hypvl.replication.report import report_markdown
from hypvl.spec.load import load_spec

MINE = {"zs_cifar10": {"top1": 61.25}, "hierarcaps": {"kendall_tau": 0.5}}  # no zs_cifar100: acc_b, avg missing
EXTRAS = {"extra__mine": {"experiment": "extra_mine", "source": "open_clip:/models/mine", "geometry": "euclidean"}}


def with_mine(root, scale="smoke"):
    """The fixture spec's metrics and an extra model's (`extra_mine`) metric JSONs."""
    metrics = write_metrics(root, scale)
    for task, values in MINE.items():
        record = {"experiment": "extra_mine", "task": task, "scale": scale, "metrics": values, "n_samples": 10,
                  "provenance": {"config_hash": "dddddddddddd", "git_commit": "c0ffee",
                                 "date": "2026-11-22T00:04:00+00:00",
                                 "model": {"experiment": "extra_mine", "source": "open_clip:/models/mine"}}}
        (metrics / "extra_mine").mkdir(exist_ok=True)
        (metrics / "extra_mine" / f"{task}.json").write_text(json.dumps(record))
    return load_spec(workspace_spec(root), root / "expected"), metrics


def workspace_spec(root):
    return root / "replication" / "tiny.yaml"


@pytest.mark.parametrize("scale", ["smoke", "full"])
def test_an_extra_model_is_a_row_of_its_own_without_a_verdict(workspace, scale):  # noqa: F811
    spec, metrics = with_mine(workspace, scale)
    frame = compare_table(spec, "table1", metrics, scale, extras=EXTRAS)
    assert list(dict.fromkeys(frame["row"]))[-1] == "extra__mine"
    mine = frame[frame["row"] == "extra__mine"].set_index("column")
    assert mine.loc["acc_a", "ours"] == 61.25 and mine.loc["tau", "ours"] == 0.5
    assert set(mine.loc[["acc_a", "tau"], "verdict"]) == {"extra"}  # measured: its number, no verdict
    assert mine["paper"].isna().all() and mine["delta"].isna().all() and set(mine["paper_text"]) == {""}
    assert set(mine.loc[["acc_b", "avg"], "verdict"]) == {"missing"}  # zs_cifar100 not measured
    assert set(mine.loc[["acc_b", "avg"], "reason"]) == {NOT_RUN}
    assert not set(mine["verdict"]) & {"within", "outside", "within_seed_spread", "not_comparable"}
    assert frame[frame["row"] != "extra__mine"].equals(compare_table(spec, "table1", metrics, scale)
                                                       .reset_index(drop=True))  # the printed rows unchanged


def test_an_extra_row_survives_the_csv_and_is_marked_in_the_report(workspace, tmp_path):  # noqa: F811
    spec, metrics = with_mine(workspace)
    frame = compare_table(spec, "table1", metrics, "smoke", extras=EXTRAS)
    write_compare_csv(frame, tmp_path / "t.csv")
    frame = read_compare_csv(tmp_path / "t.csv")
    report = report_markdown(spec, "table1", frame, "table1.png")
    ours = report.split("## Ours")[1].split("## Difference")[0]
    line = next(line for line in ours.splitlines() if "mine (extra model)" in line)
    assert "61.25" in line and "0.500" in line
    difference = report.split("## Difference")[1].split("## Rows")[0]
    line = next(line for line in difference.splitlines() if "mine (extra model)" in line)
    assert "✓" not in line and "✗" not in line and "n/c" not in line
    assert "`extra__mine`" in report.split("## Rows")[1] and "`extra_mine`" in report


def test_a_missing_extra_model_says_why(workspace):  # noqa: F811
    spec, metrics = with_mine(workspace)
    frame = compare_table(spec, "table1", metrics, "smoke", extras=EXTRAS,
                          blockers=Blockers({"extra_mine": "needs weights from outside"}))
    mine = frame[frame["row"] == "extra__mine"]
    assert set(mine.loc[mine["verdict"] == "missing", "reason"]) == {"needs weights from outside"}


def test_extras_naming_a_spec_experiment_are_refused(workspace):  # noqa: F811
    spec, metrics = with_mine(workspace)
    with pytest.raises(InputError, match="'tiny_clip' is an experiment of .*tiny.yaml, not an extra model"):
        compare_table(spec, "table1", metrics, "smoke",
                      extras={"extra__x": {"experiment": "tiny_clip", "source": "hypvl:x.pt"}})


def test_a_table_laid_out_the_other_way_cannot_be_entered():
    config = load_config()
    from hypvl.spec.load import load_all_specs

    specs = load_all_specs(config["replication_dir"], config["expected_dir"])
    assert entry_problem(specs["hierarcaps"].table("table7")) == (
        "its columns are models, not measures: a model is no row of it")
    for paper, table in [("hycoclip", "table1"), ("hycoclip", "table2"), ("meru", "table1"), ("meru", "table2"),
                         ("hierarcaps", "table1")]:
        assert entry_problem(specs[paper].table(table)) is None


def test_an_open_clip_or_transformers_model_is_euclidean_without_saying_so(tmp_path):
    assert parse_extra("mine", {"source": f"open_clip:{tmp_path}"}).geometry == "euclidean"
    assert parse_extra("mine", {"source": f"transformers:{tmp_path}"}).geometry == "euclidean"


@pytest.mark.parametrize("entry, problem", [
    ({"source": "onnx:/x", "geometry": "euclidean"}, r"source: 'onnx:/x' is not <kind>:<where>"),
    ({"source": "open_clip:{folder}", "geometry": "lorentz"}, "a open_clip model is euclidean, not lorentz"),
    ({"source": "hypvl:{folder}"}, "geometry: None is not one of euclidean, lorentz, poincare"),  # only a library's
    # models go without one (euclidean: test_an_open_clip_or_transformers_model_is_euclidean_without_saying_so)
    ({"source": "hypvl:/no/such.pt", "geometry": "poincare"}, "source: /no/such.pt does not exist"),
    ({"source": "released-format:{folder}", "geometry": "euclidean", "method": "meru", "backbone": "vit_s16"},
     "a meru model is lorentz, not euclidean"),
    ({"source": "released-format:{folder}", "geometry": "lorentz"}, "needs `method`"),
    ({"source": "open_clip:{folder}", "geometry": "euclidean", "method": "clip"}, "describe a released-format"),
    ({"source": "transformers:a/b/c", "geometry": "euclidean"}, "nor is it a hub id"),
])
def test_a_bad_extra_model_is_one_line_naming_its_key(tmp_path, entry, problem):
    entry = {key: value.format(folder=tmp_path) if isinstance(value, str) else value for key, value in entry.items()}
    with pytest.raises(InputError, match=f"^config: extra_models.mine.*{problem}"):
        parse_extra("mine", entry)


def test_sources_parse(tmp_path):
    extras = extra_models({"extra_models": {
        "a": {"source": f"open_clip:{tmp_path}", "geometry": "euclidean"},
        "b": {"source": "open_clip:ViT-B-16/laion2b_s34b_b88k", "geometry": "euclidean"},
        "c": {"source": "transformers:openai/clip-vit-base-patch32", "geometry": "euclidean"}}})
    assert [(e.kind, e.local, e.experiment, e.row) for e in extras.values()] == [
        ("open_clip", True, "extra_a", "extra__a"), ("open_clip", False, "extra_b", "extra__b"),
        ("transformers", False, "extra_c", "extra__c")]


def plan_with(tmp_path, extra_models):
    from hypvl.workflow import Plan

    config = load_config()
    return Plan({**config, "results_dir": str(tmp_path / "results"), "extra_models": extra_models})


def test_the_plan_imports_evaluates_and_compares_an_extra_model(tmp_path):
    plan = plan_with(tmp_path, {"mine": {"source": f"open_clip:{tmp_path}", "geometry": "euclidean"}})
    metrics = tmp_path / "results" / "metrics" / "extra_mine"
    assert plan.imports("extra_mine") and plan.model_of("extra_mine") == "extra_mine"
    assert plan.outside.extra_input("extra_mine") == [str(tmp_path)]
    assert plan.outside.extra_args("extra_mine") == ["--name", "mine", "--source", f"open_clip:{tmp_path}",
                                                     "--geometry", "euclidean"]
    inputs = plan.reports.table_inputs("hycoclip", "table1")
    assert str(metrics / "zs_imagenet.json") in inputs and str(metrics / "zs_cifar10.json") in inputs
    assert plan.reports.row_inputs("meru", "table1", "extra__mine") == sorted(
        str(metrics / f"{task}.json") for task in ("ret_coco", "ret_flickr30k"))
    assert json.loads(plan.reports.extras_arg("hierarcaps", "table1")) == {
        "extra__mine": {"experiment": "extra_mine", "source": f"open_clip:{tmp_path}", "geometry": "euclidean"}}
    assert plan.reports.extras_arg("hierarcaps", "table7") == "{}"  # its columns are models
    assert not any("extra_mine" in path for path in plan.reports.table_inputs("hierarcaps", "table7"))
    assert not any("extra_mine" in path for path in plan.reports.metric_files())  # the regression pins none


def test_a_hub_model_is_fetched_at_paper_scale_and_needs_weights_at_smoke_scale(tmp_path):
    plan = plan_with(tmp_path, {"hub": {"source": "transformers:openai/clip-vit-base-patch32",
                                        "geometry": "euclidean"}})
    assert not plan.runnable("extra_hub") and plan.blocker("extra_hub") == "needs weights from outside"
    assert plan.reports.blockers("meru", "table1").experiments["extra_hub"] == "needs weights from outside"


def test_an_extra_model_may_not_take_a_spec_experiments_id(tmp_path):
    import yaml

    from hypvl.workflow.core import Core

    specs = tmp_path / "replication"
    specs.mkdir()
    spec = yaml.safe_load((REPO / "replication" / "meru.yaml").read_text())
    spec["experiments"]["extra_x"] = next(iter(spec["experiments"].values()))
    (specs / "meru.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    with pytest.raises(InputError, match="extra_models.x: its id 'extra_x' is an experiment of .*meru.yaml"):
        Core({**load_config(), "replication_dir": str(specs), "results_dir": str(tmp_path / "r"),
              "extra_models": {"x": {"source": f"hypvl:{specs / 'meru.yaml'}", "geometry": "lorentz"}}})


def test_an_import_refuses_a_model_of_another_geometry(tmp_path):
    import torch

    from hypvl.models.build import build_model
    from hypvl.models.checkpoints import save_checkpoint
    from hypvl.outside.extra_import import import_extra

    model_cfg = load_config()["model"]
    torch.manual_seed(0)
    save_checkpoint(tmp_path / "clip.pt", build_model("clip", "vit_s16", model_cfg),
                    {"method": "clip", "backbone": "vit_s16", "overrides": {}, "model_cfg": model_cfg}, step=0)
    extra = parse_extra("mine", {"source": f"hypvl:{tmp_path / 'clip.pt'}", "geometry": "lorentz"})
    with pytest.raises(InputError, match=r"clip.pt: holds a euclidean model \(CLIP\), declared lorentz"):
        import_extra(extra, load_config())
    model, recipe = import_extra(parse_extra("mine", {"source": f"hypvl:{tmp_path / 'clip.pt'}",
                                                     "geometry": "euclidean"}), load_config())
    assert recipe["experiment"] == "extra_mine" and recipe["source"] == f"hypvl:{tmp_path / 'clip.pt'}"
    assert recipe["weights"]["sha256"].keys() == {"clip.pt"}


def test_coverage_says_which_tables_an_extra_model_enters_and_why_not(tmp_path):
    from hypvl.workflow.coverage import coverage_frames, render_coverage

    plan = plan_with(tmp_path, {"mine": {"source": f"open_clip:{tmp_path}", "geometry": "euclidean"}})
    text = render_coverage(plan, coverage_frames(plan, tmp_path / "metrics"), tmp_path / "metrics", tmp_path)
    hierarcaps = text.split("## hierarcaps")[1].split("\n## ")[0]
    table7 = hierarcaps.split("### table7")[1].split("### ")[0]
    assert ("Extra models: `extra__mine` cannot enter this table: its columns are models, not measures: a model is "
            "no row of it.") in table7
    assert "Extra models: rows `extra__mine`." in hierarcaps.split("### table1")[1].split("### ")[0]
