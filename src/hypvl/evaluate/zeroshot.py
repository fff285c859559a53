"""Zero-shot image classification: prompt ensembles per class, each method's similarity, per-class accuracy.

The class embedding is built as each method does it (CLIP: normalise, mean, normalise; MERU and
HyCoCLIP: mean of the projected text features, then scale and exponential map). An image is assigned
the most similar class (cosine, or negative Lorentzian distance). The papers' metric is mean per-class
accuracy (torchmetrics' macro average in MERU/HyCoCLIP code); top-1 is recorded beside it, and top-5 on sets of five or
more classes (CLIP_benchmark's acc5, which it leaves undefined below five). Images are resized and
centre-cropped (a public model: its own preprocessing, `DualEncoder.eval_view`).
"""

from dataclasses import dataclass

import torch

from hypvl.data.formats.classification_split import read_classification_split
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings, text_features
from hypvl.evaluate.metrics.checks import check_finite
from hypvl.evaluate.metrics.classification import mean_per_class_accuracy, top1_accuracy, top_k_accuracy


TOP_K = 5  # the k of the top-k accuracy recorded beside top-1 (hypvl.tasks declares it as `top5`)


@dataclass(frozen=True)
class ZeroShotScores:
    """(N, C) image-class scores, (N,) true labels, the C class names in label order and, for an image folder, its
    class-folder names (None for a webdataset)."""

    scores: torch.Tensor
    target: torch.Tensor
    class_names: list[str]
    class_dirs: list[str] | None


@torch.no_grad()
def class_embeddings(model, tokenizer, class_names: list[str], templates: list[str], batch_size: int,
                     name: str) -> torch.Tensor:
    """(C, D) class embeddings from `templates` filled with each class name, ensembled per method."""
    prompts = [t.format(c) for c in class_names for t in templates]
    feats = text_features(model, tokenizer, prompts, batch_size, name)
    return model.ensemble_prompts(feats.view(len(class_names), len(templates), -1))


@torch.no_grad()
def zero_shot_scores(model, tokenizer, root, split: str, templates: list[str], image_size: int, batch_size: int,
                     name: str, class_names: list[str] | None = None,
                     max_classes: int | None = None) -> ZeroShotScores:
    """Score every image of the classification split `root/split` (either layout) against every class; class
    names from the set's classnames.txt unless given (the catalog's, for real datasets); with `max_classes`, only the
    first classes and their images."""
    dataset = read_classification_split(root, split).first_classes(max_classes)
    names = class_names or dataset.class_names
    if names is None:
        raise InputError(f"{root}: no classnames.txt and no class names given")
    names = names[:max_classes] if max_classes else names
    if len(names) != dataset.num_classes:
        raise InputError(f"{dataset.folder}: {len(names)} class names for its {dataset.num_classes} classes")
    classes = class_embeddings(model, tokenizer, list(names), templates, batch_size, name)
    images = image_embeddings(model, dataset.load, len(dataset), lambda img: model.eval_view(img, image_size, "crop"),
                              batch_size, name)
    scores = model.similarity(images, classes)
    check_finite(f"{name} scores", scores)
    class_dirs = None if dataset.class_dirs is None else list(dataset.class_dirs)
    return ZeroShotScores(scores, torch.tensor(dataset.labels), list(names), class_dirs)


def zero_shot_metrics(result: ZeroShotScores) -> TaskResult:
    """Mean per-class accuracy and top-1 (percent) of the argmax predictions, and top-5 where there are five classes
    or more (TOP_K)."""
    metrics = {"mean_per_class_accuracy": mean_per_class_accuracy(result.scores, result.target,
                                                                  len(result.class_names)),
               "top1": top1_accuracy(result.scores, result.target)}
    if len(result.class_names) >= TOP_K:
        metrics[f"top{TOP_K}"] = top_k_accuracy(result.scores, result.target, TOP_K)
    return TaskResult(metrics, len(result.target))


def evaluate_zero_shot(model, tokenizer, root, split: str, templates: list[str], image_size: int,
                       batch_size: int, name: str, class_names: list[str] | None = None) -> TaskResult:
    """Zero-shot classification metrics on the classification split `root/split` (either layout)."""
    return zero_shot_metrics(zero_shot_scores(model, tokenizer, root, split, templates, image_size, batch_size,
                                              name, class_names))


def dataset_scores(ctx: EvalContext, name: str) -> ZeroShotScores:
    """Zero-shot scores on catalog dataset `name` with the evaluation's prompt set (smoke: the folder's class
    names)."""
    from hypvl.data.catalog import load_dataset_info

    info = load_dataset_info(name)
    return zero_shot_scores(ctx.model, ctx.tokenizer, ctx.classification_root(name),
                            ctx.config["eval"]["classification_split"], ctx.templates(name), ctx.image_size,
                            ctx.batch_size, name, None if ctx.scale == "smoke" else list(info.class_names),
                            ctx.config["eval"].get("max_classes"))


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Task `zs_<dataset>`."""
    return zero_shot_metrics(dataset_scores(ctx, task.removeprefix("zs_")))
