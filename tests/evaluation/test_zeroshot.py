"""Zero-shot classification: prompts, ensembling, metrics against scikit-learn, and NaN refusal."""

import json
import re

import pytest
import torch
from PIL import Image
from sklearn.metrics import balanced_accuracy_score

from helpers.models import _model
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.data.transforms import resize_center_crop, to_tensor_batch
from hypvl.errors import InputError
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError
from hypvl.evaluate.results import write_metrics
from hypvl.evaluate.zeroshot import evaluate_zero_shot
from hypvl.models.encoders import Tokenizer

TEMPLATES = ["a photo of a {}.", "pics : {}."]


@pytest.fixture
def folder(tmp_path):
    g = torch.Generator().manual_seed(1)
    items = [(i % 3, Image.fromarray((torch.rand(20, 24, 3, generator=g) * 255).byte().numpy()))
             for i in range(12)]
    write_imagefolder(tmp_path, "test", ["dog", "car", "rose"], items)
    return tmp_path


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_metrics_match_an_independent_computation(folder, method):
    model, tok = _model(method).eval(), Tokenizer(12)
    result = evaluate_zero_shot(model, tok, folder, "test", TEMPLATES, 16, 5, "toy")
    # oracle: embed each prompt, ensemble by hand, score, and ask scikit-learn
    with torch.no_grad():
        feats = torch.stack([model.text_features(tok([t.format(c) for t in TEMPLATES]))
                             for c in ["dog", "car", "rose"]])
        if method == "clip":
            classes = torch.nn.functional.normalize(torch.nn.functional.normalize(feats, dim=-1).mean(1), dim=-1)
        else:
            classes = model.embed_text(feats.mean(1))
        paths = sorted(folder.glob("test/*/*.png"))
        images = model.encode_image(to_tensor_batch([resize_center_crop(Image.open(p).convert("RGB"), 16)
                                                     for p in paths]))
        pred = model.similarity(images, classes).argmax(1)
    target = [int(p.parent.name) for p in paths]
    assert result.n_samples == 12
    assert result.metrics["mean_per_class_accuracy"] == pytest.approx(
        100 * balanced_accuracy_score(target, pred.numpy()), abs=1e-6)
    assert result.metrics["top1"] == pytest.approx(100 * (pred.numpy() == target).mean(), abs=1e-6)
    assert "top5" not in result.metrics  # three classes: top-5 is undefined, as CLIP_benchmark leaves acc5 (NaN)


def test_nan_embeddings_are_an_error_and_nothing_is_written(folder, tmp_path, monkeypatch):
    model = _model("meru").eval()
    monkeypatch.setattr(model, "encode_image", lambda images: torch.full((images.shape[0], 8), float("nan")))
    with pytest.raises(NonFiniteEmbeddingError, match="toy image embeddings"):
        evaluate_zero_shot(model, Tokenizer(12), folder, "test", TEMPLATES, 16, 5, "toy")


@pytest.mark.parametrize("metrics, problem", [
    ({"top1": float("inf")}, "'top1' is inf, not a finite number"),
    ({"top1": float("nan")}, "'top1' is nan, not a finite number"),
    ({"top1": -5.0}, "'top1' is -5.0, outside [0, 100] for a percent"),
    ({"top1": 2100.0}, "'top1' is 2100.0, outside [0, 100] for a percent"),
    ({"top1": 50.0, "top10": 70.0}, "'top10' is not a metric of task 'zs_cifar10'"),
    ({"top1": 50.0, "top5": 70.0}, "'top5' is not a metric of task 'zs_food101'"),  # four classes at smoke scale
])
def test_metrics_json_refuses_undeclared_non_finite_and_out_of_range_values(tmp_path, metrics, problem):
    out = tmp_path / "m.json"
    task = "zs_food101" if "food101" in problem else "zs_cifar10"
    with pytest.raises(InputError, match=re.escape(problem)):
        write_metrics(out, "e", task, "smoke", metrics, 3, "abc", 0.1)
    assert not out.exists()


def test_metrics_json_records_metrics_and_provenance(tmp_path):
    out = tmp_path / "m.json"
    write_metrics(out, "e", "zs_cifar10", "smoke", {"top1": 50.0}, 3, "abc", 0.1)
    record = json.loads(out.read_text())
    assert record["metrics"] == {"top1": 50.0} and record["provenance"]["config_hash"] == "abc"
    assert set(record["provenance"]) >= {"git_commit", "date", "packages", "seconds"}


def test_eval_prompts_switch_the_prompt_set_of_every_catalog_dataset(tmp_path, monkeypatch):
    from hypvl.data.catalog import load_dataset_info
    from hypvl.evaluate import zeroshot
    from hypvl.evaluate.context import EvalContext

    g = torch.Generator().manual_seed(2)
    items = [(i % 2, Image.fromarray((torch.rand(16, 16, 3, generator=g) * 255).byte().numpy())) for i in range(6)]
    write_imagefolder(tmp_path / "cls" / "food101", "test", ["pizza", "sushi"], items)
    config = {"scale": "smoke", "data_dir": str(tmp_path),
              "eval": {"classification_dir": "cls", "classification_split": "test", "batch_size": 4}}
    model, tok = _model("clip").eval(), Tokenizer(12)
    seen = []
    embed = zeroshot.class_embeddings
    monkeypatch.setattr(zeroshot, "class_embeddings", lambda m, t, names, templates, *rest: (
        seen.append(templates), embed(m, t, names, templates, *rest))[1])
    scores = {prompts: zeroshot.dataset_scores(EvalContext(model, tok, 16, config, prompts), "food101").scores
              for prompts in ("meru", "clip")}
    info = load_dataset_info("food101")
    assert seen == [list(info.prompts), list(info.templates("clip"))] == [["food : {}.", "food porn : {}."],
                                                                         ["a photo of {}, a type of food."]]
    assert not torch.allclose(scores["meru"], scores["clip"])
    assert EvalContext(model, tok, 16, config).templates("food101") == ["food : {}.", "food porn : {}."]
