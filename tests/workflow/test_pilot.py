"""The pilot (workflows/config/pilot.yaml over full.yaml): one printed row of HyCoCLIP Table 1 (the ViT-S GRIT
HyCoCLIP) runs end to end on the paper-scale path: the pilot world written into a local mirror, every dataset the row
reads acquired from it through the real acquisition code, GRIT grounded, the model trained at full size through
torchrun with DataLoader workers over streamed shards, evaluated on the 16 zero-shot sets the table prints (of the 20;
11 CLIP_benchmark webdatasets, 5 image folders, in their acquired layouts) in a job of its own, and compared. A change that breaks that path
fails here. The same model's HyCoCLIP Table 2 row then reads COCO val2017, Flickr30K's Karpathy test split and the
WordNet is-a file in the layouts their acquisitions and prepare steps leave."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import REPO
from helpers.workflow import snakemake
from hypvl.config import load_config
from hypvl.data.catalog import dataset_names, load_dataset_info
from hypvl.spec.load import load_all_specs
from hypvl.spec.tables import row_needs

PILOT = ["workflows/config/full.yaml", "workflows/config/pilot.yaml"]
ROW = ("hycoclip", "table1", "grit_vits_hycoclip")
TABLE2_ROW = ("hycoclip", "table2", "vits_hycoclip")  # the same model: retrieval and hierarchical metrics
EXPERIMENT = "hyco_hycoclip_vits_grit"
ROW_SETS = sorted(task.removeprefix("zs_") for _, task in row_needs(
    load_all_specs(REPO / "replication", REPO / "expected")[ROW[0]].table(ROW[1]), ROW[2]))  # what the row prints


def job_counts(log: str) -> dict[str, int]:
    """Rule -> jobs run, from Snakemake's job-stats table."""
    table = log.split("Job stats:", 1)[1]
    return {rule: int(count) for rule, count in re.findall(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)
            if rule != "total"}


@pytest.fixture(scope="module")
def pilot_row(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pilot")
    paths = tmp / "paths.yaml"
    paths.write_text(yaml.safe_dump({
        "data_dir": str(tmp / "data"), "results_dir": str(tmp / "results"), "reports_dir": str(tmp / "reports"),
        "fetch": {"mirror": str(tmp / "data" / "mirror"), "sources": str(tmp / "data" / "mirror" / "sources.yaml"),
                  "weights": None}}))
    target = tmp / "results" / "rows" / ROW[0] / ROW[1] / f"{ROW[2]}.csv"
    run = snakemake(str(target), "--cores", "2", "--configfile", *PILOT, str(paths))
    assert run.returncode == 0, run.stderr[-3000:]
    return tmp, run.stdout + run.stderr, target


def test_every_step_of_the_paper_scale_path_ran(pilot_row):
    _, log, _ = pilot_row
    counts = {re.sub(r"_part\d+$", "", rule): n for rule, n in job_counts(log).items()}  # a group's subset: its part
    assert counts == {"pilot_world": 1, "acquire": len(ROW_SETS) + 1, "ground": 1, "train": 1, "evaluate_zeroshot": 1,
                      "compare_row": 1}


def test_the_model_trained_at_paper_size_on_the_grounded_corpus(pilot_row):
    tmp, _, _ = pilot_row
    config = load_config([REPO / path for path in PILOT])
    models = tmp / "results" / "models" / EXPERIMENT
    measured = json.loads((tmp / "results" / "metrics" / EXPERIMENT / "zs_cifar10.json").read_text())
    assert measured["provenance"]["run_config"]["model"] == config["model"]  # ViT-S/16 at 224 px, 12-layer text tower
    assert not config["keep_checkpoints"] and not (models / "checkpoint.pt").exists()  # a temp() file, read and gone
    summary = json.loads((models / "train_summary.json").read_text())
    assert summary["schedule"]["steps"] == config["train"]["steps"]
    assert summary["samples_read"] == config["train"]["steps"] * summary["schedule"]["batch_size"]
    assert not (models / "resume.pt").exists()  # written every step, removed once the run is done
    grounding = json.loads((tmp / "data" / config["corpora"]["grit"] / "grounding.json").read_text())
    assert grounding["counts"]["samples_in"] == config["pilot_world"]["grit_samples"]
    assert len(grounding["shards"]) >= config["train"]["num_workers"]


def test_every_zero_shot_set_was_read_in_its_acquired_layout_and_compared(pilot_row):
    tmp, _, target = pilot_row
    config = load_config([REPO / path for path in PILOT])
    per_set = config["pilot_world"]["images_per_class"]
    assert len(ROW_SETS) == 16 and {load_dataset_info(name).layout for name in ROW_SETS} == {"clip_benchmark_wds",
                                                                                              "imagefolder"}
    read = sorted(path.stem.removeprefix("zs_") for path in (tmp / "results" / "metrics" / EXPERIMENT).glob("zs_*"))
    assert read == ROW_SETS  # no set the tables do not print of this model (MNIST, PCam, SST2, CLEVR) is evaluated
    assert not any((tmp / "data" / "acquired" / f"{name}.json").exists() for name in set(dataset_names()) - set(read))
    for name in ROW_SETS:
        acquired = json.loads((tmp / "data" / "acquired" / f"{name}.json").read_text())
        assert acquired["ready"] == [str(tmp / "data" / config["acquire"][name] / "test")]
        metrics = json.loads((tmp / "results" / "metrics" / EXPERIMENT / f"zs_{name}.json").read_text())
        assert metrics["scale"] == "pilot"
        assert metrics["n_samples"] == per_set * min(config["eval"]["max_classes"], load_dataset_info(name).num_classes)
    row = pd.read_csv(target)
    assert len(row) == 16 and set(row["verdict"]) == {"not_comparable"} and set(row["scale"]) == {"pilot"}
    assert Path(tmp / "data" / "eval" / "classification" / "cifar10" / "SHA256SUMS").is_file()  # recorded on fetch


def test_the_same_models_retrieval_and_hierarchy_row_reads_coco_flickr30k_and_wordnet_as_acquired(pilot_row):
    tmp, _, _ = pilot_row
    config = load_config([REPO / path for path in PILOT])
    target = tmp / "results" / "rows" / TABLE2_ROW[0] / TABLE2_ROW[1] / f"{TABLE2_ROW[2]}.csv"
    run = snakemake(str(target), "--cores", "2", "--configfile", *PILOT, str(tmp / "paths.yaml"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert job_counts(run.stdout + run.stderr) == {"acquire": 3, "train": 1, "evaluate_retrieval": 1,
                                                   "evaluate_hierarchy": 1, "compare_row": 1}  # coco_val2017,
    # flickr30k, wordnet_isa; the model trained again: its checkpoint went once the Table 1 row had read it
    images = config["pilot_world"]["retrieval_images"]
    assert images <= 10
    for task in ("ret_coco", "ret_flickr30k"):
        metrics = json.loads((tmp / "results" / "metrics" / EXPERIMENT / f"{task}.json").read_text())
        assert metrics["n_samples"] == images and metrics["scale"] == "pilot"
        assert metrics["metrics"]["t2i_r10"] == 100.0  # 10 >= the gallery's 8 images: every caption finds its own
    row = pd.read_csv(target)
    assert len(row) == 13 and set(row["verdict"]) == {"not_comparable"} and row["ours"].notna().all()
