"""Your model beside the papers', at smoke scale through the workflow: an extra model declared as an open_clip folder
and one declared as a transformers folder (smoke-sized stand-ins of a public CLIP, randomly initialised, in those
libraries' own layouts) are imported, evaluated and compared as rows `extra__<name>` of HyCoCLIP Tables 1-2, MERU
Tables 1-2 and HierarCaps Table 1: every cell filled with their number, none given a verdict."""

import json
import math
import subprocess
import sys

import pytest
import torch
import yaml

from helpers.workflow import TINY, snakemake
from hypvl.models.build import build_model
from hypvl.models.checkpoints import save_checkpoint
from hypvl.outside.standins import standin_model, write_open_clip
from hypvl.replication.compare import read_compare_csv

TABLES = (("hycoclip", "table1"), ("hycoclip", "table2"), ("meru", "table1"), ("meru", "table2"),
          ("hierarcaps", "table1"))
EXTRAS = ("oc", "tf")


def library_folders(tmp) -> dict[str, str]:
    """An open_clip folder (our CLIP converted) and a transformers folder (its CLIP at the smoke size): the sources."""
    torch.manual_seed(0)
    model_cfg = TINY["model"]
    clip = build_model("clip", "vit_s16", model_cfg)
    save_checkpoint(tmp / "clip.pt", clip, {"method": "clip", "backbone": "vit_s16", "overrides": {},
                                            "model_cfg": model_cfg}, step=0)
    write_open_clip(tmp / "clip.pt", tmp / "open_clip_folder")
    standin_model("clip", model_cfg, "vit_s16").save_pretrained(tmp / "transformers_folder")
    return {"oc": f"open_clip:{tmp / 'open_clip_folder'}", "tf": f"transformers:{tmp / 'transformers_folder'}"}


@pytest.fixture(scope="module")
def extra_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("extras")
    sources = library_folders(tmp)
    config = {**TINY, "data_dir": str(tmp / "data"), "results_dir": str(tmp / "results"),
              "reports_dir": str(tmp / "reports"), "eval": {"vg_attribution_min_count": 1},  # the tiny world's pairs
              "extra_models": {name: {"source": source, "geometry": "euclidean"} for name, source in sources.items()}}
    (tmp / "config.yaml").write_text(yaml.safe_dump(config))
    targets = [str(tmp / "results" / "rows" / paper / table / f"extra__{name}.csv")
               for paper, table in TABLES for name in EXTRAS]
    run = snakemake(*targets, "--cores", "2", "--configfile", str(tmp / "config.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    return tmp, sources


@pytest.mark.parametrize("paper, table", TABLES)
def test_extra_models_are_rows_with_every_cell_filled_and_no_verdict(extra_run, paper, table):
    tmp, sources = extra_run
    for name in EXTRAS:
        frame = read_compare_csv(tmp / "results" / "rows" / paper / table / f"extra__{name}.csv")
        assert set(frame["row"]) == {f"extra__{name}"} and set(frame["experiment"]) == {f"extra_{name}"}
        assert set(frame["verdict"]) == {"extra"}, frame[["column", "verdict", "reason"]]
        assert frame["ours"].map(math.isfinite).all()
        assert frame["paper"].isna().all() and frame["delta"].isna().all()


def test_the_metrics_name_the_model_they_measured(extra_run):
    tmp, sources = extra_run
    for name in EXTRAS:
        record = json.loads((tmp / "results" / "metrics" / f"extra_{name}" / "zs_imagenet.json").read_text())
        assert record["experiment"] == f"extra_{name}"
        assert record["provenance"]["model"]["source"] == sources[name]
        assert record["provenance"]["model"]["library"] == ("open_clip" if name == "oc" else "transformers")


@pytest.mark.parametrize("group, tasks", [("hierarcaps", ["hierarcaps"]), ("retrieval", ["ret_coco", "ret_flickr30k"])])
def test_hypvl_evaluate_takes_any_model_from_its_source(extra_run, group, tasks):
    """`hypvl evaluate <group> --source ...`: no spec, no checkpoint; the same numbers as the workflow's row."""
    tmp, sources = extra_run
    out = tmp / "by_hand" / group
    run = subprocess.run([sys.executable, "-m", "hypvl.cli", "evaluate", group, "--source", sources["oc"],  # euclidean
                          "--configfile", str(tmp / "config.yaml"), "--out-dir", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    for task in tasks:
        ours = json.loads((out / f"{task}.json").read_text())
        workflow = json.loads((tmp / "results" / "metrics" / "extra_oc" / f"{task}.json").read_text())
        assert ours["experiment"] == "extra_model" and ours["provenance"]["model"]["source"] == sources["oc"]
        assert ours["metrics"] == workflow["metrics"]


def test_hypvl_evaluate_without_a_model_says_so(tmp_path):
    run = subprocess.run([sys.executable, "-m", "hypvl.cli", "evaluate", "stats", "--out-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "hypvl evaluate: give --experiment and --checkpoint, or --source (any model)" in run.stderr
    assert "Traceback" not in run.stderr


PLUGIN = '''
"""A Euclidean CLIP whose entailment root is a learned point, not the empty string's embedding."""
import torch
from torch import nn

from hypvl.models.build import build_model
from hypvl.models.clip import CLIP
from hypvl.methods import register_model


@register_model("learned_root_clip")
class LearnedRootCLIP(CLIP):
    @classmethod
    def from_recipe(cls, recipe):
        plain = build_model("clip", recipe["backbone"], recipe["model_cfg"])
        model = cls(plain.visual, plain.textual, recipe["model_cfg"]["embed_dim"])
        model.built_from = {key: recipe[key] for key in ("backbone", "model_cfg")}
        return model

    def __init__(self, visual, textual, embed_dim, temperature=0.07):
        super().__init__(visual, textual, embed_dim, temperature)
        self.root = nn.Parameter(torch.zeros(embed_dim))

    def recipe(self):
        return {"model_class": "learned_root_clip", **self.built_from}

    def entailment_root(self, empty_text):
        return nn.functional.normalize(self.root.detach(), dim=-1)
'''
HIERARCHICAL = {"hierarchy": ["hier_imagenet"], "hierarcaps": ["hierarcaps"], "lexical": ["hyperlex", "breeds"]}


def evaluate_all(tmp, model_args, out, configfiles, env=None):
    """`hypvl evaluate` of every hierarchical group in one process (`::`), on the tiny world of `extra_run`."""
    options = [arg for path in configfiles for arg in ("--configfile", str(path))]
    command = [sys.executable, "-m", "hypvl.cli"]
    for index, group in enumerate(HIERARCHICAL):
        command += ([] if index == 0 else ["::"]) + ["evaluate", group, *model_args, *options, "--out-dir", str(out)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    return {task: json.loads((out / f"{task}.json").read_text())["metrics"]
            for tasks in HIERARCHICAL.values() for task in tasks}


def test_a_plugged_in_model_class_is_evaluated_on_the_hierarchical_tasks_in_its_own_geometry(extra_run):
    """A model class registered by a plug-in module (config `plugins`), its root learned: every hierarchical task
    measures radii and entailment from that root, without a change to the task code. Oracle: our plain CLIP with the
    same weights and that root fixed (`radial_root`, the path radial fine-tunings take) gives the same numbers."""
    import os

    from torch import nn

    tmp, _ = extra_run
    (tmp / "plugins").mkdir()
    (tmp / "plugins" / "learned_root.py").write_text(PLUGIN)
    (tmp / "plugins.yaml").write_text(yaml.safe_dump({"plugins": ["learned_root"]}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp / "plugins"), os.environ.get("PYTHONPATH", "")])}
    sys.path.insert(0, str(tmp / "plugins"))
    try:
        from learned_root import LearnedRootCLIP
    finally:
        sys.path.remove(str(tmp / "plugins"))
    torch.manual_seed(1)
    model = LearnedRootCLIP.from_recipe({"backbone": "vit_s16", "model_cfg": TINY["model"]})
    with torch.no_grad():
        model.root.normal_()
    save_checkpoint(tmp / "learned_root.pt", model, model.recipe(), step=0)
    plain = build_model("clip", "vit_s16", TINY["model"])
    plain.load_state_dict({key: value for key, value in model.state_dict().items() if key != "root"})
    save_checkpoint(tmp / "oracle.pt", plain, {"method": "clip", "backbone": "vit_s16", "overrides": {},
                                               "model_cfg": TINY["model"]},
                    step=0, radial_root=nn.functional.normalize(model.root.detach(), dim=-1))
    config = tmp / "config.yaml"
    plugged = evaluate_all(tmp, ["--source", f"hypvl:{tmp / 'learned_root.pt'}", "--geometry", "euclidean"],
                           tmp / "plugged", [config, tmp / "plugins.yaml"], env)
    oracle = evaluate_all(tmp, ["--experiment", "oracle", "--checkpoint", str(tmp / "oracle.pt")], tmp / "oracle",
                          [config])
    assert plugged == oracle
    save_checkpoint(tmp / "plain.pt", plain, {"method": "clip", "backbone": "vit_s16", "overrides": {},
                                              "model_cfg": TINY["model"]}, step=0)
    empty_root = evaluate_all(tmp, ["--source", f"hypvl:{tmp / 'plain.pt'}", "--geometry", "euclidean"],
                              tmp / "plain", [config])
    assert empty_root["hier_imagenet"] == plugged["hier_imagenet"]  # the root plays no part there
    assert empty_root["hyperlex"] != plugged["hyperlex"]  # the empty string's root is not the learned one


def test_the_export_target_writes_one_csv_and_clip_benchmark_jsons(extra_run):
    """`results/<scale>/exports/<experiment>/`: the combined CSV and CLIP_benchmark's JSONs, read back against the
    metric JSONs, with CLIP_benchmark's names (clip_benchmark/cli.py's dump, metrics/zeroshot_*.py) and units
    (fractions)."""
    import csv

    tmp, sources = extra_run
    exports = tmp / "results" / "exports" / "extra_oc"
    run = snakemake(str(exports / "metrics.csv"), str(exports / "clip_benchmark"), "--cores", "1",
                    "--configfile", str(tmp / "config.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    metrics = tmp / "results" / "metrics" / "extra_oc"

    def measured(task):
        return json.loads((metrics / f"{task}.json").read_text())["metrics"]

    rows = list(csv.DictReader((exports / "metrics.csv").open()))
    assert list(rows[0]) == ["model", "source", "task", "metric", "value", "unit", "higher_is_better", "scale"]
    assert {row["model"] for row in rows} == {"extra_oc"} and {row["source"] for row in rows} == {sources["oc"]}
    got = {(row["task"], row["metric"]): row for row in rows}
    assert {task for task, _ in got} == {path.stem for path in metrics.glob("*.json")}
    assert float(got[("zs_imagenet", "top1")]["value"]) == measured("zs_imagenet")["top1"]
    assert got[("zs_imagenet", "top1")]["unit"] == "percent"
    assert got[("hierarcaps", "kendall_tau")]["unit"] == "correlation"
    assert got[("hier_imagenet", "tie")]["higher_is_better"] == "False"
    results = {path.name: json.loads(path.read_text()) for path in (exports / "clip_benchmark").glob("*.json")}
    imagenet = results["imagenet1k_extra_oc_zeroshot_classification.json"]
    assert list(imagenet)[:6] == ["dataset", "model", "pretrained", "task", "metrics", "language"]
    folder = sources["oc"].split(":", 1)[1]  # an open_clip folder: CLIP_benchmark's --model local-dir:<folder>
    assert (imagenet["dataset"], imagenet["model"], imagenet["pretrained"], imagenet["task"]) == (
        "imagenet1k", f"local-dir:{folder}", "", "zeroshot_classification")
    assert (imagenet["model_type"], imagenet["hypvl_experiment"], imagenet["prompts"]) == ("open_clip", "extra_oc",
                                                                                           "meru")
    assert imagenet["metrics"] == {"acc1": measured("zs_imagenet")["top1"] / 100,
                                   "acc5": measured("zs_imagenet")["top5"] / 100,
                                   "mean_per_class_recall": measured("zs_imagenet")["mean_per_class_accuracy"] / 100}
    coco = results["mscoco_captions_extra_oc_zeroshot_retrieval.json"]
    assert coco["metrics"]["image_retrieval_recall@5"] == measured("ret_coco")["t2i_r5"] / 100
    assert coco["metrics"]["text_retrieval_recall@1"] == measured("ret_coco")["i2t_r1"] / 100
    values = [(name, value) for result in results.values() for name, value in result["metrics"].items()]
    assert all(0 <= value <= 1 for _, value in values if value is not None)
    assert {name for name, value in values if value is None} == {"acc5"}  # the sets of fewer than five classes
    assert "vtab_caltech101_extra_oc_zeroshot_classification.json" in results
    assert not any(name.startswith("cub_") for name in results)  # CLIP_benchmark has no CUB
    probe = results["vtab_pets_extra_oc_linear_probe.json"]
    assert probe["metrics"] == {"logreg_mean_per_class_recall": measured("linprobe_pets")["accuracy"] / 100}
    assert "MERU" in probe["protocol"]  # not CLIP_benchmark's linear probe: none of its lp_* names
    # the zero-shot sets CLIP_benchmark has (all but CUB), the two retrieval sets, the linear-probe sets (no ImageNet)
    assert len(results) == 19 + 2 + 18
