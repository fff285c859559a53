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
from test_workflow import TINY, snakemake

from hypvl.models.build import build_model
from hypvl.models.checkpoints import save_checkpoint
from hypvl.models.standins import standin_model, write_open_clip
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
    run = subprocess.run([sys.executable, "-m", "hypvl.cli", "evaluate", group, "--source", sources["oc"],
                          "--geometry", "euclidean", "--configfile", str(tmp / "config.yaml"), "--out-dir", str(out)],
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

