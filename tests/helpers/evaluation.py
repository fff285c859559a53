"""Shared pieces of the evaluation tests: tiny models, contexts, brute-force encoders and a task group's command."""

import json
from argparse import Namespace

import torch
from PIL import Image

from helpers.models import TINY, _model
from hypvl.data.transforms import to_tensor_batch
from hypvl.evaluate.context import EvalContext
from hypvl.models.encoders import Tokenizer


SIZE = TINY["image_size"]


def tiny(method: str):
    """A randomly initialised TINY model in eval mode and its tokenizer."""
    return _model(method).eval(), Tokenizer(TINY["text"]["context_length"])


def random_image(generator: torch.Generator, width: int = 24, height: int = 20) -> Image.Image:
    return Image.fromarray((torch.rand(height, width, 3, generator=generator) * 255).byte().numpy())


def context(method: str, data_dir, datasets: dict | None = None, vg_attribution_min_count: int = 25) -> EvalContext:
    """An EvalContext over `data_dir` with eval.datasets = `datasets` (paths relative to it)."""
    model, tokenizer = tiny(method)
    config = {"scale": "smoke", "data_dir": str(data_dir),
              "eval": {"batch_size": 3, "classification_dir": "classification", "classification_split": "test",
                       "linear_probe_dir": "linear_probe", "vg_attribution_min_count": vg_attribution_min_count,
                       "datasets": datasets or {}}}
    return EvalContext(model, tokenizer, SIZE, config)


@torch.no_grad()
def embed_one_by_one(model, images, view) -> torch.Tensor:
    """Oracle image embeddings: each image encoded alone, no batching or prefetch."""
    return torch.cat([model.encode_image(to_tensor_batch([view(image)])) for image in images])


@torch.no_grad()
def embed_texts_one_by_one(model, tokenizer, texts) -> torch.Tensor:
    return torch.cat([model.encode_text(tokenizer([text])) for text in texts])


def nan_images(model) -> None:
    """Make `model` return NaN image embeddings and features."""
    model.encode_image = lambda images: torch.full((images.shape[0], TINY["embed_dim"]), float("nan"))
    model.image_features = model.encode_image


def run_group(tmp_path, method: str, group: str, datasets: dict, data_dir, **extra):
    """Save a TINY checkpoint and run `hypvl evaluate <group>` on it; returns {task: record}."""
    from hypvl.evaluate.commands import evaluate_group
    from hypvl.models.checkpoints import save_checkpoint
    from hypvl.tasks import group_tasks

    model, _ = tiny(method)
    checkpoint = tmp_path / "ckpt" / "checkpoint.pt"
    save_checkpoint(checkpoint, model, {"method": method, "backbone": "vit_s16", "overrides": {}, "model_cfg": TINY},
                    step=0)
    cfg = {"scale": "smoke", "data_dir": str(data_dir),
           "eval": {"batch_size": 4, "classification_dir": "classification", "classification_split": "test",
                    "linear_probe_dir": "linear_probe", "vg_attribution_min_count": extra.get("min_count", 25),
                    "datasets": datasets}}
    out = tmp_path / "metrics"
    args = Namespace(group=group, configfile=[], config_json=[json.dumps(cfg)], project=None, checkpoint=str(checkpoint),
                     experiment="exp", out_dir=str(out), tasks=extra.get("tasks"), threads=1, prompts="meru")
    evaluate_group(args)
    return {task: json.loads((out / f"{task}.json").read_text())
            for task in (extra.get("tasks") or group_tasks("smoke")[group])}
