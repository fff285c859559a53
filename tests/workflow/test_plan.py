"""What the workflow plans: only runnable experiments and registered tasks, every table, one row alone.

Dry runs use a config whose results and reports live in a temporary folder, so the plan does not
depend on what an earlier run left in results/. Targets come before `--configfile`.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from hypvl.config import DEFAULT_CONFIG, load_config
from hypvl.worlds.smoke.probe_sources import probe_source_sets
from hypvl.errors import InputError
from hypvl.methods import METHODS, built
from hypvl.spec.load import load_all_specs
from hypvl.spec.terms import Column
from hypvl.tasks import task_group
from hypvl.workflow import Plan

WITH_TRAINING = set(load_config()["evaluate_with_training"])  # computed by the training job
def test_plan_skips_unrunnable_experiments(toy_plan):
    plan, tmp_path = toy_plan
    metrics = tmp_path / "results" / "metrics"
    assert plan.runnable("toy_clip") and plan.runnable("toy_curv") and plan.runnable("toy_width")
    start = tmp_path / "results" / "models" / "toy_curv" / "checkpoint.pt"
    assert plan.training.init_checkpoint("toy_width") == [str(start)]
    unrunnable = ("toy_released", "toy_unbuilt", "toy_yfcc", "toy_unread", "toy_width_of_released")
    assert not any(plan.runnable(exp) for exp in unrunnable)
    wanted = sorted(str(metrics / "toy_clip" / f"{task}.json") for task in ("hier_imagenet", "zs_cifar10", "zs_dtd"))
    assert plan.reports.table_inputs("toy", "table1") == wanted
    assert plan.reports.row_inputs("toy", "table1", "x") == wanted
    assert plan.reports.row_inputs("toy", "table1", "y") == [] == plan.reports.row_inputs("toy", "table1", "z")
    with pytest.raises(ValueError, match="no row 'w'"):
        plan.reports.row_inputs("toy", "table1", "w")


def test_regression_checks_every_table_input_and_the_runnable_extras(toy_plan):
    plan, tmp_path = toy_plan
    plan.config["regression_extras"] = {"toy_clip": ["stats", "hierarchy"], "toy_released": ["stats"]}
    extra = str(tmp_path / "results" / "metrics" / "toy_clip" / "stats_radius.json")
    assert plan.reports.metric_files() == sorted([*plan.reports.table_inputs("toy", "table1"), extra])


def test_claims_read_every_compare_csv_and_spec(toy_plan):
    plan, tmp_path = toy_plan
    assert plan.reports.compare_csvs() == [str(tmp_path / "results" / "tables" / "toy" / "table1.csv")]
    assert plan.reports.spec_files() == [str(tmp_path / "replication" / "toy.yaml")]
    assert plan.reports.targets() == [str(tmp_path / "reports" / "toy" / "table1.md")]


def dry_run(target: str, tmp_path) -> dict[str, int]:
    """Job counts of `snakemake -n target` at the smoke scale, results and reports under tmp_path."""
    config = tmp_path / "dry.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results"),
                                      "reports_dir": str(tmp_path / "reports")}))
    exe = Path(sys.executable).parent / "snakemake"
    run = subprocess.run([str(exe), target.format(tmp=tmp_path), "-n", "--cores", "all", "--configfile", str(config)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    stats = run.stdout.split("Job stats:")[1].split("total")[0]
    return {job: int(count) for job, count in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.M)}


def runnable_pairs(specs, needs) -> set[tuple[str, str]]:
    """(experiment, task) pairs the suite can produce, judged from the specs, registries and config directly."""
    config = yaml.safe_load(DEFAULT_CONFIG.read_text())
    corpora, datasets = config["corpora"], config["eval"]["datasets"]

    experiments = {exp_id: e for spec in specs.values() for exp_id, e in spec.experiments.items()}

    def runnable(e):  # every outside source of the specs has a smoke stand-in (checked below, where each comes from)
        return trained(e) or e.source != "train"

    def trained(e):
        if e.method == "radial_ft":  # aligns the model of the experiment its `base` names, by id or by source
            base = next((exp for exp in sorted(experiments) if e.overrides["base"] in (exp, experiments[exp].source)))
            return e.source == "train" and e.data in datasets and runnable(experiments[base])
        known = {"steps", "batch_size", "lr", "embed_dim", "pos_embed", "init_from", "freeze_encoders", "eval_prompts",
                 "no_weight_decay",
                 *(METHODS[e.method].overrides if e.method in built() else ())}
        start = e.overrides.get("init_from")
        return (e.source == "train" and e.method in built() and e.data in corpora and set(e.overrides) <= known
                and (start is None or trained(experiments[start])))

    return {(exp, task) for spec in specs.values() for exp, task in needs(spec)
            if runnable(spec.experiments[exp]) and task_group(task, "smoke") is not None}


def mapped_cells(spec, table_names=None):
    """(experiment, task) of every cell: the printed rows, released checkpoints and other readings of rows, each
    with the tasks its row reads in place of the columns', and a column's own experiment where it names one."""
    for name, table in spec.tables.items():
        if table_names is None or name in table_names:
            rows = [*table.rows.items(), *table.released.items(),
                    *((row, exp) for row, readings in table.row_readings.items() for exp in readings.values())]
            for row, exp in rows:
                renames = table.row_tasks.get(row, {})
                for column in table.columns.values():
                    if isinstance(exp, str) and isinstance(column, Column):
                        yield from ((column.experiment or exp, renames.get(task, task)) for task in column.tasks)


def test_index_plans_every_table_of_every_paper(tmp_path):
    specs = load_all_specs(REPO / "replication", REPO / "expected")
    jobs = dry_run("{tmp}/reports/index.md", tmp_path)
    n_tables = sum(len(spec.tables) for spec in specs.values())
    assert n_tables == 31
    assert (jobs["compare"], jobs["report"], jobs["claims"], jobs["coverage"], jobs["index"]) == (
        n_tables, n_tables, 1, 1, 1)
    pairs = runnable_pairs(specs, mapped_cells)
    experiments = {exp: e for spec in specs.values() for exp, e in spec.experiments.items()}
    trained = {exp for exp, _ in pairs}
    recipes = {json.dumps([e.method, e.backbone, e.data, e.boxes, e.seed,  # evaluation overrides train no model
                           {k: v for k, v in e.overrides.items() if k != "eval_prompts"}], sort_keys=True): exp
               for exp, e in sorted(experiments.items(), reverse=True) if exp in trained}  # the first id remains
    outside = {exp for exp in trained if experiments[exp].source != "train"}
    assert len(outside) == 17  # MERU's and HyCoCLIP's six released checkpoints, the HierarCaps paper's five models
    recipes = {key: exp for key, exp in recipes.items() if exp not in outside}
    fine_tuned = {exp for exp in recipes.values() if experiments[exp].method == "radial_ft"}
    # Table 1's five alignments, Table 3's nine ablations, Table 5's four, the other readings' four (L_reg, EC margin)
    assert len(fine_tuned) == 5 + 9 + 4 + 4
    assert jobs["train"] == len(recipes) - len(fine_tuned) and jobs["finetune"] == len(fine_tuned)
    assert jobs["curves"] == jobs["train"] + jobs["finetune"]  # every model's training curves, linked from a table
    assert len(recipes) < len(trained)  # e.g. PoinCLIP's MERU rows repeat MERU's recipes
    # each stood in for and imported by one job; one trained stand-in for OpenAI's two CLIPs, one for ALIGN
    assert jobs["import_standin"] == len(outside) and jobs["train_standin"] == 2
    assert "import_weights" not in jobs and "fetch_weights" not in jobs
    # the training, alignment and import jobs evaluate their models on evaluate_with_training
    groups = {(exp, task_group(task, "smoke")) for exp, task in pairs} - {
        (exp, g) for exp in [*recipes.values(), *outside] for g in WITH_TRAINING}
    evaluate = {job: count for job, count in jobs.items() if job.startswith("evaluate_")}
    assert sum(evaluate.values()) == len(groups)
    assert "compare_row" not in jobs


def test_regression_target_plans_every_table_input_and_the_extras(tmp_path):
    jobs = dry_run("{tmp}/reports/regression.md", tmp_path)
    index = dry_run("{tmp}/reports/index.md", tmp_path)
    lexical = index["evaluate_lexical"] + 3  # the extras' three; the HierarCaps models' for their tables
    assert jobs.pop("regress") == 1 and jobs.pop("evaluate_lexical") == lexical and jobs.pop("evaluate_stats") == 3
    assert jobs.pop("evaluate_linprobe") == index["evaluate_linprobe"] + 1  # hyco_meru_vits_grit's
    assert jobs.pop("evaluate_breeds_prompts") == index["evaluate_breeds_prompts"] + 1  # hyco_clip_vits_grit's
    assert jobs == {job: n for job, n in index.items() if job not in (
        "compare", "report", "curves", "claims", "coverage", "index", "evaluate_linprobe", "evaluate_lexical",
        "evaluate_breeds_prompts")}


def test_a_row_target_plans_only_that_rows_jobs(tmp_path):
    jobs = dry_run("{tmp}/results/rows/hycoclip/table4/minus_cont_ibox_t.csv", tmp_path)
    specs = load_all_specs(REPO / "replication", REPO / "expected")
    row_pairs = runnable_pairs(specs, lambda spec: (
        (exp, task) for exp, task in mapped_cells(spec, {"table4"})
        if spec.paper == "hycoclip" and exp == "hyco_hycoclip_vits_cc3m_no_cont_ibox_t"))
    groups = {task_group(task, "smoke") for _, task in row_pairs}
    # the data stage (the smoke world, the row's grounded corpus), then the row's model, evaluations and compare
    assert jobs.pop("synthesize_evaluation") == 1 and jobs.pop("synthesize_corpus") == 1 and jobs.pop("ground") == 1
    assert jobs.pop("train") == 1 and jobs.pop("compare_row") == 1
    assert groups >= {"zeroshot", "retrieval"}
    # one job per group, of the tasks the targets read of the model (Flickr30K's retrieval alone: evaluate_retrieval_part2)
    assert {job.split("_part")[0]: n for job, n in jobs.items()} == {f"evaluate_{g}": 1 for g in groups - WITH_TRAINING}
    assert "evaluate_retrieval_part2" in jobs


def test_unknown_task_groups_in_the_config_are_named(tmp_path):
    config = load_config()
    with pytest.raises(InputError, match=r"evaluate_with_training names unknown task groups \['zeroshots'\]"):
        Plan({**config, "evaluate_with_training": ["zeroshots"]})
    with pytest.raises(InputError, match=r"regression_extras.hyco_clip_vits_grit names unknown task groups"):
        Plan({**config, "regression_extras": {"hyco_clip_vits_grit": ["lexicon"]}})


def test_the_linear_probe_waits_for_the_probe_step_on_the_smoke_worlds_sources():
    plan, full = Plan(load_config()), Plan(load_config([REPO / "workflows" / "config" / "full.yaml"]))
    assert plan.data.probe_datasets() == probe_source_sets()  # the smoke world writes what the probe step reads
    data = Path(plan.config["data_dir"])
    assert plan.data.probe_inputs(plan.groups["linprobe"]) == [str(data / "eval" / "linear_probe" / name)
                                                               for name in plan.data.probe_datasets()]
    assert plan.data.probe_source("clevr") == str(data / "eval" / "probe_sources" / "clevr")
    assert plan.data.probe_inputs([*plan.groups["zeroshot"], *plan.groups["retrieval"]]) == []
    assert plan.data.probe_splits_options() == ["--scaled-source"] and full.data.probe_splits_options() == []
    assert full.data.probe_folder("eurosat") == str(Path(full.config["data_dir"]) / "eval" / "linear_probe" / "eurosat")
    assert plan.data.probe_source_inputs("dtd") == [plan.data.probe_source("dtd")]  # synthesize_evaluation's output
    assert full.data.probe_source_inputs("dtd") == []  # the user's folder, checked by the job: no acquisition holds it
    held = Plan({**full.config, "acquire": {**full.config["acquire"], "dtd_sources": "eval/probe_sources/dtd"}})
    assert held.data.probe_source_inputs("dtd") == [held.data.acquisition_marker("dtd_sources")]


def test_linear_probe_folders_overlapping_the_other_data_folders_are_refused():
    config = load_config()
    for key, value in (("linear_probe_dir", config["eval"]["classification_dir"]),
                       ("probe_source_dir", "eval/linear_probe/sources")):
        with pytest.raises(InputError, match=r"config: eval\.\w+ \(.*\) and eval\.\w+ \(.*\) overlap"):
            Plan({**config, "eval": {**config["eval"], key: value}})


def test_a_wildcard_pattern_matches_exactly_its_ids():
    """Plan.pattern writes ids as a trie of their shared prefixes: it matches each id and nothing else (no prefix,
    no extension, a regex character taken literally), and nothing at all for no ids."""
    ids = ["hyco_clip_vits_grit", "hyco_clip_vits_grit_boxes", "hyco_clip_vits", "hyco_meru_vits_grit", "a.b", "z"]
    pattern = Plan.pattern(ids)
    assert len(pattern) < len("|".join(ids))
    assert all(re.fullmatch(pattern, name) for name in ids)
    others = ["hyco", "hyco_clip_vits_gri", "hyco_clip_vits_grit_", "hyco_meru_vits", "axb", "a", "zz", ""]
    assert not any(re.fullmatch(pattern, name) for name in others)
    assert re.fullmatch(Plan.pattern([]), "") is None and re.fullmatch(Plan.pattern([]), "x") is None
