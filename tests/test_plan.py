"""What the workflow plans: only runnable experiments and registered tasks, every table, one row alone.

Dry runs use a config whose results and reports live in a temporary folder, so the plan does not
depend on what an earlier run left in results/. Targets come before `--configfile`.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from hypvl.config import DEFAULT_CONFIG, deep_merge, load_config
from hypvl.data.synthetic.probe_sources import probe_source_sets
from hypvl.errors import InputError
from hypvl.models.methods import METHOD_NAMES, MODEL_OVERRIDES
from hypvl.spec.load import load_all_specs
from hypvl.spec.terms import Column
from hypvl.tasks import task_group
from hypvl.train.recipe import resolve_schedule, steps_for, train_section_for
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
                 *MODEL_OVERRIDES.get(e.method, ())}
        start = e.overrides.get("init_from")
        return (e.source == "train" and e.method in METHOD_NAMES and e.data in corpora and set(e.overrides) <= known
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


def test_training_priority_orders_the_flagship_models_by_their_cost():
    """The train rule's priority: HyCoCLIP (two encodings per sample) above CLIP/MERU, ViT-B above ViT-S."""
    plan = Plan(load_config())
    cost = {exp: plan.training.cost(exp) for exp in ("hyco_hycoclip_vitb_grit", "hyco_hycoclip_vits_grit",
                                                  "hyco_clip_vitb_grit", "hyco_clip_vits_grit")}
    assert list(cost) == sorted(cost, key=cost.get, reverse=True)
    assert plan.training.cost("hyco_meru_vits_grit_boxes") == cost["hyco_clip_vits_grit"]  # same batch, same towers
    priority = [plan.training.priority(exp) for exp in cost]
    assert priority == sorted(priority, reverse=True) and -1 <= min(priority) and max(priority) < 0  # after the rest


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


def test_training_jobs_chain_their_evaluations_in_one_process():
    plan = Plan(load_config())
    args = plan.evaluation.args("zeroshot", "hyco_clip_vits_grit", 1)
    assert args.startswith("evaluate zeroshot --experiment hyco_clip_vits_grit --checkpoint ")
    assert plan.checkpoint("hyco_clip_vits_grit") in args and "--config-json '{" in args


def test_a_recipe_repeated_under_another_id_is_trained_once():
    plan = Plan(load_config())
    assert plan.model_of("poin_meru_vitl") == plan.model_of("meru_meru_vitl") == "meru_meru_vitl"
    assert plan.model_of("syn_meru_vits_grit") == "hyco_meru_vits_grit"
    assert plan.model_of("meru_meru_vitl_fixed_c") == "meru_meru_vitl_fixed_c"  # other overrides, other model
    assert plan.trains("meru_meru_vitl") and not plan.trains("poin_meru_vitl")
    assert not re.fullmatch(plan.trained_pattern(), "poin_meru_vitl")
    assert re.fullmatch(plan.trained_pattern(False), "poin_meru_vitl")
    args = plan.evaluation.args("zeroshot", "poin_meru_vitl", 1)  # its own metrics, the other's checkpoint
    assert f"--checkpoint {plan.checkpoint('meru_meru_vitl')}" in args and "--experiment poin_meru_vitl" in args


def test_every_meru_ablation_is_runnable_and_eval_prompts_reach_the_evaluation():
    plan = Plan(load_config())
    meru = plan.specs["meru"]
    rows = [exp for table in ("table4", "table5") for exp in meru.table(table).rows.values() if isinstance(exp, str)]
    assert len(rows) == 14 and all(plan.runnable(exp) for exp in rows)
    assert plan.data.trained_corpus("meru_clip_vits_yfcc_bs4096") == "yfcc15m"
    # CLIP's prompts are how a model is evaluated, not another model: the 120k RedCaps row is meru_clip_vits's model
    assert plan.model_of("meru_clip_vits_redcaps_clip_prompts") == "meru_clip_vits"
    args = plan.evaluation.args("zeroshot", "meru_clip_vits_redcaps_clip_prompts", 1)
    assert f"--checkpoint {plan.checkpoint('meru_clip_vits')}" in args and " --prompts clip " in args
    assert " --prompts clip " in plan.evaluation.args("zeroshot", "meru_clip_vits_yfcc_bs4096", 1)
    assert "--prompts" not in plan.evaluation.args("zeroshot", "meru_clip_vits", 1)


def test_steps_for_sets_the_grid_models_steps_in_their_cost_and_their_train_jobs_only():
    plan = Plan(load_config())
    grid, full_run = "poin_grid_lambda_reg_0_1_lambda_0_1", "poin_poinclip_vits"  # both batch 2048, ViT-S
    train = plan.config["train"]
    assert train["steps_for"]["poin_grid_*"] == 100 != train["steps"]
    assert plan.training.run(grid).steps == 100 and plan.training.run(full_run).steps == train["steps"]
    assert plan.training.cost(grid) == pytest.approx(plan.training.cost(full_run) * 100 / train["steps"])
    own = json.loads(shlex.split(plan.training.experiment_config(grid))[0])
    assert own["train"]["steps_for"] == {"poin_grid_*": 100}
    # the other models' train jobs read what they read before `steps_for` existed: nothing retrains them
    other = json.loads(shlex.split(plan.training.experiment_config(full_run))[0])
    before = json.loads(shlex.split(plan.step_config("train"))[0])
    before["train"].pop("steps_for")
    assert other == before


def test_a_fine_tuning_reads_nothing_of_train_but_the_run_settings_handed_apart():
    """The finetune job reports as training does (train.telemetry, among the run settings handed to it apart), so a
    change to another train setting (steps, batch) leaves the fine-tuned models current."""
    plan = Plan(load_config())
    passed = json.loads(shlex.split(plan.step_config("finetune"))[0])
    assert "train" not in passed and "model" not in passed and passed["radial_ft"] == plan.config["radial_ft"]
    handed = load_config(config_json=[*shlex.split(plan.step_config("finetune")),
                                      *shlex.split(plan.step_config("run_settings"))])
    assert handed["train"]["telemetry"] == plan.config["train"]["telemetry"]


@pytest.mark.parametrize("edit", [{"telemetry": {"log_every": 7, "tensorboard": False,
                                                 "wandb": {"project": "p", "entity": None, "mode": "offline"}}},
                                  {"checkpoint_every": 3}, {"cache_decoded": False}])
def test_editing_a_run_setting_changes_no_jobs_tracked_config_and_reaches_the_job(edit):
    """The run settings (checkpoints, the decoded cache, telemetry) are outside what the train, finetune and stand-in
    rules track (their params: Snakemake reruns a job whose params changed) and reach the job in the JSON handed
    apart, merged last; every other train setting is still tracked."""
    plan = Plan(load_config())
    edited = Plan(deep_merge(plan.config, {"train": edit}))
    experiment = "hyco_clip_vits_grit"
    for step in ("finetune", "evaluate", "ground"):
        assert edited.step_config(step) == plan.step_config(step)
    assert edited.training.experiment_config(experiment) == plan.training.experiment_config(experiment)
    assert edited.outside.standin_config(experiment) == plan.outside.standin_config(experiment)
    assert edited.step_config("run_settings") != plan.step_config("run_settings")
    job = load_config(config_json=[*shlex.split(edited.training.experiment_config(experiment)),
                                   *shlex.split(edited.step_config("run_settings"))])
    assert job["train"] == {**plan.config["train"], **edit}
    shuffled = Plan(deep_merge(plan.config, {"train": {"shuffle_buffer": 3}}))
    assert shuffled.training.experiment_config(experiment) != plan.training.experiment_config(experiment)


def test_every_steps_for_entry_matches_an_experiment_and_paper_scale_undoes_them():
    config, full = load_config(), load_config([REPO / "workflows" / "config" / "full.yaml"])
    experiments = {exp: e for spec in load_all_specs(REPO / "replication", REPO / "expected").values()
                   for exp, e in spec.experiments.items()}
    assert all(any(steps_for(exp, config["train"]).get(pattern) for exp in experiments)
               for pattern in config["train"]["steps_for"])
    for exp, e in experiments.items():
        schedule = resolve_schedule(e.overrides, train_section_for(exp, full["train"]))
        assert schedule.steps == e.overrides.get("steps", full["train"]["paper_steps"]), exp


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
