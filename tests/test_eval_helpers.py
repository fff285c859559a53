"""Shared pieces of the evaluation tests (tiny models, contexts, brute-force encoders), plus tests of the
shared feature extraction and the command that runs a task group."""

import json
import os
from argparse import Namespace

import pytest
import torch
from PIL import Image
from test_models import TINY, _model

from hypvl.data.formats.imagefolder import load_image
from hypvl.data.transforms import resize_center_crop, squeeze, to_tensor_batch
from hypvl.evaluate.context import EvalContext
from hypvl.errors import InputError
from hypvl.evaluate.features import image_embeddings, set_loader_workers, trunk_features
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError
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


def test_prefetched_batches_equal_one_by_one_encoding(tmp_path):
    g = torch.Generator().manual_seed(0)
    paths = []
    for i in range(7):
        paths.append(tmp_path / f"{i}.png")
        random_image(g, 20 + i, 18).save(paths[-1])
    model, _ = tiny("meru")
    batched = image_embeddings(model, lambda i: load_image(paths[i]), 7, lambda im: squeeze(im, SIZE), 3, "x")
    oracle = embed_one_by_one(model, [load_image(p) for p in paths], lambda im: squeeze(im, SIZE))
    assert torch.allclose(batched, oracle, atol=1e-5)
    trunk = trunk_features(model, lambda i: load_image(paths[i]), 7, lambda im: resize_center_crop(im, SIZE), 2, "x")
    with torch.no_grad():
        pixels = to_tensor_batch([resize_center_crop(load_image(p), SIZE) for p in paths])
        expected = model.visual((pixels - torch.tensor([0.485, 0.456, 0.406])[:, None, None])
                                / torch.tensor([0.229, 0.224, 0.225])[:, None, None])
    assert trunk.shape == (7, TINY["backbones"]["vit_s16"]["width"])
    assert torch.allclose(trunk, expected, atol=1e-5)
    nan_images(model)
    with pytest.raises(NonFiniteEmbeddingError, match="x image embeddings"):
        image_embeddings(model, lambda i: load_image(paths[i]), 7, lambda im: squeeze(im, SIZE), 3, "x")


def test_loader_processes_give_bitwise_the_features_of_loader_threads(tmp_path):
    """`eval.num_workers`: images decoded and cropped in DataLoader processes, the same batches, the same bits; a
    bad image is the same one-line error."""
    g = torch.Generator().manual_seed(3)
    paths = [tmp_path / f"{i}.jpg" for i in range(7)]
    for i, path in enumerate(paths):
        random_image(g, 30 + 3 * i, 22).save(path, quality=90)
    model, _ = tiny("meru")
    pids = tmp_path / "pids"

    def load(i):
        with pids.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        return load_image(paths[i])

    def embed():
        return image_embeddings(model, load, 7, lambda im: resize_center_crop(im, SIZE), 3, "x")

    threads = embed()
    assert set(pids.read_text().split()) == {str(os.getpid())}
    pids.unlink()
    set_loader_workers(2)
    try:
        processes = embed()
        paths[4].write_bytes(b"not a JPEG")
        with pytest.raises(InputError, match=rf"^{paths[4]}: image does not decode"):
            embed()
    finally:
        set_loader_workers(0)
    assert torch.equal(processes, threads)
    assert str(os.getpid()) not in pids.read_text().split()  # decoded in the loader processes only


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
