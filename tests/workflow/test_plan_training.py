"""What the workflow plans for training: the train jobs' order, the models trained once for several experiments, the
steps and configs each train or fine-tune job is handed, and the run settings it is handed apart."""

import json
import re
import shlex

import pytest

from helpers import REPO
from hypvl.config import deep_merge, load_config
from hypvl.spec.load import load_all_specs
from hypvl.train.recipe import resolve_schedule, steps_for, train_section_for
from hypvl.workflow import Plan


def test_training_priority_orders_the_flagship_models_by_their_cost():
    """The train rule's priority: HyCoCLIP (two encodings per sample) above CLIP/MERU, ViT-B above ViT-S."""
    plan = Plan(load_config())
    cost = {exp: plan.training.cost(exp) for exp in ("hyco_hycoclip_vitb_grit", "hyco_hycoclip_vits_grit",
                                                  "hyco_clip_vitb_grit", "hyco_clip_vits_grit")}
    assert list(cost) == sorted(cost, key=cost.get, reverse=True)
    assert plan.training.cost("hyco_meru_vits_grit_boxes") == cost["hyco_clip_vits_grit"]  # same batch, same towers
    priority = [plan.training.priority(exp) for exp in cost]
    assert priority == sorted(priority, reverse=True) and -1 <= min(priority) and max(priority) < 0  # after the rest


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
