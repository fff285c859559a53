"""How the workflow plans HierarCaps' RE alignment (method radial_ft): the base a fine-tuning starts from, the
finetune rule and its command at smoke scale (stand-in bases) and at paper scale, with the paper's settings
(App. B.4)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import REPO
from helpers.plan_fixture import EXPECTED, TOY_SPEC
from hypvl.config import load_config
from hypvl.errors import InputError
from hypvl.spec.load import load_spec
from hypvl.train.radial_recipe import radial_recipe, radial_schedule
from hypvl.workflow import Plan

def toy_plan(tmp_path, experiments: dict) -> Plan:
    replication = tmp_path / "replication"
    replication.mkdir(exist_ok=True)
    spec = {**TOY_SPEC, "experiments": {**TOY_SPEC["experiments"], **experiments}}
    (replication / "toy.yaml").write_text(yaml.safe_dump(spec))
    return Plan({**load_config(), "results_dir": str(tmp_path / "results"), "replication_dir": str(replication),
                 "expected_dir": str(EXPECTED)})


def radial(base, **overrides) -> dict:
    return {"method": "radial_ft", "backbone": "vit_s16", "data": "hierarcaps_train", "source": "train",
            "overrides": {"base": base, **overrides}}


def test_a_fine_tuning_starts_from_the_model_its_base_names_by_id_or_by_source(tmp_path):
    plan = toy_plan(tmp_path, {"toy_ft": radial("toy_clip"), "toy_ft_again": radial("toy_clip"),
                               "toy_ft_origin": radial("toy_clip", root="fixed_origin"),
                               "toy_ft_released": radial("released:meru_vit_s")})
    assert plan.base_of("toy_ft") == "toy_clip" and plan.base_of("toy_ft_released") == "toy_released"
    assert plan.runnable("toy_ft") and not plan.runnable("toy_ft_released")  # as runnable as its base
    base = tmp_path / "results" / "models" / "toy_clip" / "checkpoint.pt"
    assert plan.training.base_checkpoint("toy_ft") == str(base)
    # one model per recipe; a fine-tuning is made by the finetune rule, never the train rule
    assert plan.model_of("toy_ft_again") == "toy_ft" != plan.model_of("toy_ft_origin")
    finetuned, trained = ({exp for exp in plan.experiments() if re.fullmatch(plan.training.trained_by(rule), exp)}
                          for rule in ("finetune", "train"))
    assert finetuned == {"toy_ft", "toy_ft_origin", "toy_ft_released"} and "toy_clip" in trained
    assert not finetuned & trained and re.fullmatch(plan.trained_pattern(), "toy_ft")
    data = str(Path(plan.config["data_dir"]) / "eval" / "hierarcaps" / "data")
    assert plan.training.finetune_data("toy_ft") == {"--train-csv": f"{data}/hierarcaps_train.csv.gz"}


def test_a_clip_objective_fine_tuning_also_reads_the_train_images(tmp_path):
    plan = toy_plan(tmp_path, {"toy_ft": radial("toy_clip", objective="clip")})
    data = Path(plan.config["data_dir"])
    images = data / "train" / "cc3m" / "images"  # in the CC3M corpus, as at paper scale
    assert plan.training.finetune_data("toy_ft")["--train-images"] == str(images)
    # the smoke world writes the CSV (synthesize_evaluation) and the CC3M corpus (synthesize_corpus, which leaves
    # corpus.json): the job waits for both
    assert plan.training.finetune_inputs("toy_ft")[-2:] == [
        str(data / "eval" / "hierarcaps" / "data" / "hierarcaps_train.csv.gz"), str(images / "corpus.json")]


def test_a_base_that_names_nothing_is_refused_naming_the_spec(tmp_path):
    with pytest.raises(InputError, match=r"toy\.yaml: experiments\.toy_ft\.overrides\.base: 'toy_clpi' is neither"):
        toy_plan(tmp_path, {"toy_ft": radial("toy_clpi")})


def test_every_hierarcaps_fine_tuning_aligns_clip_b_or_its_own_pretrained_model():
    plan = Plan(load_config())
    spec = plan.specs["hierarcaps"]
    bases = {exp: plan.base_of(exp) for exp, e in spec.experiments.items() if e.method == "radial_ft"}
    assert len(bases) == 22
    assert {bases[f"hcaps_{m}_ft"] for m in ("clip_l", "openclip_b", "openclip_h", "align")} == {
        "hcaps_clip_l", "hcaps_openclip_b", "hcaps_openclip_h", "hcaps_align"}
    assert sum(base == "hcaps_clip_b" for base in bases.values()) == 18
    for exp in bases:  # every override is one the fine-tuner reads, with a value it takes
        radial_recipe({"id": exp, "method": "radial_ft", "overrides": spec.experiments[exp].overrides})


def finetune_commands(tmp_path, *configfiles) -> dict[str, str]:
    """Experiment -> the `hypvl finetune` command a dry run of HierarCaps Tables 1, 3 and 5 plans (data, results
    and reports under tmp_path)."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({f"{name}_dir": str(tmp_path / name) for name in ("data", "results", "reports")}))
    exe = Path(sys.executable).parent / "snakemake"
    targets = [str(tmp_path / "reports" / "hierarcaps" / f"table{n}.md") for n in (1, 3, 5)]
    run = subprocess.run([str(exe), *targets, "-n", "-p", "--cores", "8", "--configfile", *configfiles, str(config)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    commands = [line[line.index("hypvl finetune "):] for line in run.stdout.splitlines() if "hypvl finetune " in line]
    return {re.search(r"--experiment (\S+)", line).group(1): line for line in commands}


def test_paper_scale_plans_each_fine_tuning_from_its_pretrained_model_with_the_papers_settings(tmp_path):
    commands = finetune_commands(tmp_path, str(REPO / "workflows" / "config" / "full.yaml"))
    # Table 1's five alignments, Table 3's nine ablations and Table 5's four EC margins of CLIP^B, and the other
    # readings' four (CLIP^B_FT with the paper's L_reg, three EC margins as App. C.5 prints them)
    assert len(commands) == 22
    models = tmp_path / "results" / "models"
    csv = tmp_path / "data" / "eval" / "hierarcaps" / "data" / "hierarcaps_train.csv.gz"  # where acquisition puts it
    for experiment, command in commands.items():
        base = "hcaps_clip_b" if experiment.startswith("hcaps_clip_b_ft") else experiment.removesuffix("_ft")
        assert f"--base-checkpoint {models / base / 'checkpoint.pt'} --train-csv {csv} " in command  # as acquired
        assert ('"radial_ft": {"device": "auto", "epochs": null, "lr_scale": 1.0, "weight_decay": 0.01}'
                in command) and " :: evaluate" not in command
    # CC3M as img2dataset writes it (`--output_folder images`, the manifest's prepare step)
    assert f"--train-images {tmp_path / 'data' / 'train' / 'cc3m' / 'images'} " in commands["hcaps_clip_b_ft_clip_objective"]
    full = load_config([REPO / "workflows" / "config" / "full.yaml"])["radial_ft"]
    spec = load_spec(REPO / "replication" / "hierarcaps.yaml", REPO / "expected")
    recipes = {exp: radial_recipe({"id": exp, "method": "radial_ft", "overrides": spec.experiments[exp].overrides})
               for exp in commands}
    for recipe in recipes.values():  # App. B.4: one epoch, batch 8, AdamW at 1e-7, lambda_RE 1, lambda_reg 10
        assert radial_schedule(recipe, full) == (1, 1e-7) and recipe.batch_size == 8 and recipe.lambda_re == 1.0
    assert full["weight_decay"] == 0.01 and recipes["hcaps_clip_b_ft"].lambda_reg == 10.0
    assert recipes["hcaps_clip_b_ft_no_reg"].lambda_reg == recipes["hcaps_clip_b_ft_from_scratch"].lambda_reg == 0.0
    assert recipes["hcaps_clip_b_ft_three_tiers"].tiers == (1, 3, 4)
    assert [recipes[f"hcaps_clip_b_ft_ec_alpha_{a}"].ec_alpha for a in ("0", "pi_8", "pi_4", "pi_2")] == pytest.approx(
        [0.0, 3.14159265 / 8, 3.14159265 / 4, 3.14159265 / 2])
    # the readings: what the tables compare (the code's L_reg, App. B.2's margin), and the others beside them
    assert recipes["hcaps_clip_b_ft"].regulariser == "code" and recipes["hcaps_clip_b_ft_reg_paper"].regulariser == "paper"
    for a in ("pi_8", "pi_4", "pi_2"):
        outside, inside = recipes[f"hcaps_clip_b_ft_ec_alpha_{a}"], recipes[f"hcaps_clip_b_ft_ec_alpha_{a}_inside"]
        assert (outside.ec_margin, inside.ec_margin, inside.ec_alpha) == ("outside", "inside", outside.ec_alpha)


def test_smoke_scale_maps_the_schedule_and_evaluates_inside_the_job(tmp_path):
    commands = finetune_commands(tmp_path)
    assert len(commands) == 22
    command = commands["hcaps_clip_b_ft"]
    assert '"radial_ft": {"device": "cpu", "epochs": 8, "lr_scale": 100.0, "weight_decay": 0.01}' in command
    assert " :: evaluate zeroshot --experiment hcaps_clip_b_ft " in command
