"""A toy replication spec and the plan of it (conftest's `toy_plan` fixture), shared by the planning tests."""

import yaml

from helpers import REPO
from hypvl.config import load_config
from hypvl.workflow import Plan

EXPECTED = REPO / "tests" / "data" / "claims" / "expected"  # holds toy/table1.csv (columns a b c d)
TOY_SPEC = {
    "paper": "toy",
    "title": "Toy",
    "experiments": {
        "toy_clip": {"method": "clip", "backbone": "vit_s16", "data": "grit", "source": "train"},
        "toy_released": {"method": "meru", "backbone": "vit_s16", "data": "grit", "source": "released:meru_vit_s"},
        "toy_unbuilt": {"method": "unbuilt", "backbone": "vit_s16", "data": "grit", "source": "train"},
        "toy_yfcc": {"method": "clip", "backbone": "vit_s16", "data": "yfcc15m", "source": "train"},
        "toy_unread": {"method": "meru", "backbone": "vit_s16", "data": "grit", "source": "train",
                       "overrides": {"steps": 10, "patch_dropout": 0.5}},
        "toy_width": {"method": "meru", "backbone": "vit_s16", "data": "grit", "source": "train",
                      "overrides": {"steps": 10, "embed_dim": 64, "init_from": "toy_curv", "freeze_encoders": True}},
        "toy_width_of_released": {"method": "meru", "backbone": "vit_s16", "data": "grit", "source": "train",
                                  "overrides": {"embed_dim": 64, "init_from": "toy_released"}},
        "toy_curv": {"method": "meru", "backbone": "vit_s16", "data": "grit", "source": "train",
                     "overrides": {"steps": 10, "batch_size": 8, "curv_init": 0.5, "learn_curv": False}},
    },
    "tables": {"table1": {
        "title": "Toy", "expected": "table1.csv", "tolerance": 1.0,
        "rows": {"x": "toy_clip", "y": "toy_released", "z": "toy_unbuilt"},
        "columns": {"a": {"task": "zs_cifar10", "metric": "top1"},
                    "b": {"task": "zs_dtd", "metric": "top1"},
                    "c": {"task": "hier_imagenet", "metric": "tie"},
                    "d": {"external": "not measured by the suite"}},
    }},
}


def toy_plan_in(tmp_path):
    """(the plan of TOY_SPEC with everything under tmp_path, tmp_path)."""
    replication = tmp_path / "replication"
    replication.mkdir()
    (replication / "toy.yaml").write_text(yaml.safe_dump(TOY_SPEC))
    config = {"scale": "smoke", "results_dir": str(tmp_path / "results"), "reports_dir": str(tmp_path / "reports"),
              "replication_dir": str(replication), "expected_dir": str(EXPECTED), "corpora": {"grit": "train/grit"},
              "eval": load_config()["eval"],
              "weights": load_config()["weights"],  # smoke stand-ins: toy_released is mapped beside no trained row
              "train": {"steps": 10}}
    return Plan(config), tmp_path
