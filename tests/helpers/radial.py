"""A base checkpoint and the radial alignment runs made from it, for the radial fine-tuning tests."""

import torch

from hypvl.config import load_config
from hypvl.data.formats.hierarcaps import HierarCapsPair, write_hierarcaps_train
from hypvl.models.build import build_model
from hypvl.models.checkpoints import save_checkpoint
from hypvl.train.radial import finetune


MODEL_CFG = load_config()["model"]
CFG = {"epochs": 1, "lr_scale": 1e4, "weight_decay": 0.01, "device": "cpu"}  # LR 1e-3: every step moves
QUIET = {"log_every": 0, "tensorboard": False, "wandb": None}  # train.telemetry: train_log.csv only
ANIMALS = ("dog", "cat", "owl", "horse", "eagle")
ROWS = [HierarCapsPair(("an animal", f"a {noun}", f"a small {noun}", f"a small striped {noun} on the beach"),
                       ("a vehicle", f"a {other}", f"a large {noun}", f"a small plain {noun} in the snow"))
        for noun, other in zip(ANIMALS, ANIMALS[1:] + ANIMALS[:1])]


def base_checkpoint(tmp_path, method: str = "clip"):
    torch.manual_seed(0)
    model = build_model(method, "vit_s16", MODEL_CFG)
    path = tmp_path / f"{method}.pt"
    recipe = {"method": method, "backbone": "vit_s16", "overrides": {}, "model_cfg": MODEL_CFG, "experiment": "base"}
    save_checkpoint(path, model, recipe, step=1)
    return path


def align(tmp_path, base, seed=0, out="out", telemetry=QUIET, **overrides):
    """finetune() of a radial_ft experiment with `overrides` on ROWS (batches of 2), reporting as `telemetry`
    (config train.telemetry) says; returns the saved blob."""
    csv = tmp_path / "train.csv"
    write_hierarcaps_train(csv, ROWS)
    experiment = {"id": "ft", "method": "radial_ft", "seed": seed,
                  "overrides": {"base": "base", "batch_size": 2, **overrides}}
    finetune(experiment, base, csv, CFG, tmp_path / out, telemetry, progress=False)
    return torch.load(tmp_path / out / "checkpoint.pt", weights_only=True)
