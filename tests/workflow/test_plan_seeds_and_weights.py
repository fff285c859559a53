"""Planning seeds (each seed's trainings and metrics), repeated recipes trained once, and weights from outside
(stand-ins trained here, fetches at paper scale, local paths)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from hypvl.config import load_config
from hypvl.errors import InputError
from hypvl.workflow import Plan


def seeded_plan(toy_plan, seeds) -> Plan:
    plan, _ = toy_plan
    return Plan({**plan.config, "seeds": seeds})


def test_seeds_add_the_trainings_of_each_seed_and_their_metrics_to_the_table(toy_plan):
    """`seeds: {<paper>/<table>: 3}`: each trained row gets seeds s, s+1, s+2 from its declared s; the variants
    train (a job each) and the table needs their metrics; the regression does not (variants are not pinned)."""
    plan = seeded_plan(toy_plan, {"toy/table1": 3})
    metrics = Path(plan.config["results_dir"]) / "metrics"
    assert plan.seeds == {"toy_clip": (0, 1, 2)}  # toy_released comes from outside, toy_unbuilt is no method
    for variant, seed in (("toy_clip__seed1", 1), ("toy_clip__seed2", 2)):
        assert plan.experiment(variant).seed == seed and plan.declared_id(variant) == "toy_clip"
        assert plan.trains(variant) and re.fullmatch(plan.trained_pattern(), variant)
        assert plan.checkpoint(plan.model_of(variant)).endswith(f"models/{variant}/checkpoint.pt")
    tasks = ("hier_imagenet", "zs_cifar10", "zs_dtd")
    assert plan.reports.table_inputs("toy", "table1") == sorted(str(metrics / exp / f"{task}.json") for task in tasks
                                                        for exp in ("toy_clip", "toy_clip__seed1", "toy_clip__seed2"))
    assert plan.reports.row_inputs("toy", "table1", "x") == plan.reports.table_inputs("toy", "table1")
    assert not any("__seed" in path for path in plan.reports.metric_files())
    assert json.loads(plan.reports.seeds_arg("toy", "table1")) == {"toy_clip": [0, 1, 2]}


def test_seeds_by_experiment_as_a_list_or_everywhere(toy_plan):
    assert seeded_plan(toy_plan, {"toy_clip": [1, 2]}).seeds == {"toy_clip": (1, 2)}  # its declared 0 not among them
    assert seeded_plan(toy_plan, 2).seeds == {"toy_clip": (0, 1)}  # every trained row of every table
    assert seeded_plan(toy_plan, {"toy_clip": [0]}).seeds == {}  # the declared seed alone changes nothing
    for key in ("toy_clp", "toy/table9", "toy_released", "toy_unbuilt"):
        with pytest.raises(InputError, match=rf"config: seeds\.{key}: neither an experiment the suite trains "
                                             r"nor a <paper>/<table>"):
            seeded_plan(toy_plan, {key: 2})


def test_a_seed_variant_of_a_repeated_recipe_is_trained_once():
    plan = Plan({**load_config(), "seeds": {"meru/table2": 2, "poinclip/table1": 2}})
    assert plan.model_of("poin_meru_vitl__seed1") == plan.model_of("meru_meru_vitl__seed1") == "meru_meru_vitl__seed1"


def test_the_train_rule_trains_a_variant_as_its_experiment_with_another_seed(tmp_path):
    config = tmp_path / "seeds.yaml"
    config.write_text(yaml.safe_dump({"data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results"),
                                      "seeds": {"hyco_clip_vits_grit": 2}}))
    target = tmp_path / "results" / "models" / "hyco_clip_vits_grit__seed1" / "checkpoint.pt"
    run = subprocess.run([str(Path(sys.executable).parent / "snakemake"), str(target), "-n", "-p", "--cores", "1",
                          "--configfile", str(config)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    [command] = [line.removeprefix("Shell command: ") for line in (run.stdout + run.stderr).splitlines()
                 if line.startswith("Shell command: hypvl train")]
    assert " --experiment hyco_clip_vits_grit --seed 1 " in command
    assert f"--out {tmp_path}/results/models/hyco_clip_vits_grit__seed1 " in command
    assert "evaluate zeroshot --experiment hyco_clip_vits_grit__seed1 " in command


def test_every_outside_source_is_stood_in_for_by_a_model_trained_here():
    plan = Plan(load_config())
    models = Path(load_config()["results_dir"]) / "models"
    standins = Path(load_config()["results_dir"]) / "standins"
    expected = {  # released: its table row's model; open_clip: our CLIP; transformers: its own trained architecture
        "meru_released_meru_vitl": models / "meru_meru_vitl",
        "hyco_released_hycoclip_vits": models / "hyco_hycoclip_vits_grit",
        "hcaps_openclip_b": models / "hyco_clip_vits_grit", "hcaps_openclip_h": models / "hyco_clip_vitb_grit",
        "hcaps_clip_b": standins / "hcaps_clip_b", "hcaps_clip_l": standins / "hcaps_clip_b",
        "hcaps_align": standins / "hcaps_align"}
    for experiment, folder in expected.items():
        assert plan.runnable(experiment) and plan.outside.standin_from(experiment) == str(folder / "checkpoint.pt")
    # written where the job that imports it writes it, in the released layout
    assert plan.outside.stood_in("meru_released_meru_vitl") and plan.outside.weights_folders() == {}
    weights = standins / "meru_released_meru_vitl" / "weights"
    assert plan.outside.weights_input("meru_released_meru_vitl") == str(weights)
    assert plan.outside.standin_args("meru_released_meru_vitl") == ["--kind", "released", "--file", "meru_vit_l.pth",
                                                                    "--model-of", "meru_meru_vitl"]
    fetched = Plan({**plan.config, "weights": {**plan.config["weights"], "standins": None}})
    folder = str(Path(load_config()["data_dir"]) / "weights" / "released" / "meru_vit_l")
    assert not fetched.outside.stood_in("meru_released_meru_vitl")
    assert fetched.outside.weights_input("meru_released_meru_vitl") == folder
    assert fetched.outside.weights_folders()[folder] == "meru_released_meru_vitl"
    assert plan.outside.standin_trainings() == ["hcaps_align", "hcaps_clip_b"]
    assert plan.outside.source_checkpoint("pretrained:openai/clip-vit-base-patch32") == plan.checkpoint("hcaps_clip_b")


def test_a_released_checkpoint_without_a_row_of_ours_has_no_stand_in(toy_plan):
    plan, _ = toy_plan
    assert not plan.runnable("toy_released")  # no table maps it beside a trained row
    plan = Plan({**plan.config, "weights": {**plan.config["weights"], "standins": None}})
    assert plan.runnable("toy_released")  # where the real weights are fetched


def test_paper_scale_fetches_every_model_of_hierarcaps_table1_unless_held_locally(tmp_path):
    held = tmp_path / "align-base"
    held.mkdir()
    config = tmp_path / "full.yaml"
    folders = {f"{name}_dir": str(tmp_path / name) for name in ("data", "results", "reports")}
    config.write_text(yaml.safe_dump({**folders, "weights": {"local": {"pretrained:kakaobrain/align-base": str(held)}}}))
    exe = Path(sys.executable).parent / "snakemake"
    run = subprocess.run([str(exe), str(tmp_path / "reports" / "hierarcaps" / "table1.md"), "-n", "-p", "--cores",
                          "1", "--configfile", str(REPO / "workflows" / "config" / "full.yaml"), str(config)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    shells = [line.removeprefix("Shell command: ") for line in run.stdout.splitlines() if line.startswith("Shell")]
    claimed = {c.removeprefix("python -m hypvl.runtime.gpu_claim 1 -- ") for c in shells if "gpu_claim" in c}
    commands = [c.removeprefix("python -m hypvl.runtime.gpu_claim 1 -- ") for c in shells]
    fetched = sorted(c.split()[2] for c in commands if c.startswith("hypvl fetch-weights "))
    assert fetched == ["open_clip:laion/CLIP-ViT-B-32-laion2B-s34B-b79K",
                       "open_clip:laion/CLIP-ViT-H-14-laion2B-s32B-b79K",
                       "transformers:openai/clip-vit-base-patch32", "transformers:openai/clip-vit-large-patch14"]
    acquire = next(c for c in commands if "transformers:openai/clip-vit-base-patch32" in c)
    assert f"--dest {tmp_path}/data/weights/transformers/openai/clip-vit-base-patch32" in acquire
    # the package's weights manifest is the command's default, never a path on the command line: the path moves with
    # the checkout, and a job whose parameters changed would fetch its weights again
    assert "--sources" not in acquire and "weights.yaml" not in acquire
    imports = {c.split("--experiment ")[1].split()[0]: c for c in commands if c.startswith("hypvl import-weights")}
    assert sorted(imports) == ["hcaps_align", "hcaps_clip_b", "hcaps_clip_l", "hcaps_openclip_b", "hcaps_openclip_h"]
    assert f"--weights {held}" in imports["hcaps_align"]  # read where it is held, not fetched
    assert not any(c.startswith(("hypvl write-standin", "hypvl train")) for c in commands)  # nothing stood in
    evaluated = [c for c in commands if c.startswith("hypvl evaluate")]
    # 5 models, their FTs and CLIP^B_FT with the paper's L_reg (row clip_b_ft__reg_paper) x 4 groups
    assert len(evaluated) == 44 and all('"scale": "full"' in c for c in evaluated)
    finetuned = [c for c in commands if c.startswith("hypvl finetune")]
    assert len(finetuned) == 6  # tests/workflow/test_radial_plan.py: their settings
    assert claimed == set(evaluated + finetuned)  # each on a GPU of its own (full.yaml's resources.jobs)


def test_a_local_path_that_does_not_exist_is_named():
    config = load_config()
    with pytest.raises(InputError, match=r"local.released:meru_vit_s is /nowhere/meru_vit_s.pth, which does not"):
        Plan({**config, "weights": {**config["weights"], "local": {"released:meru_vit_s": "/nowhere/meru_vit_s.pth"}}})
