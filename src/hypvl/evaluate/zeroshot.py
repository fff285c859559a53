"""Zero-shot image classification: prompt ensembles per class, each method's similarity, per-class accuracy.

The class embedding is built as each method does it (CLIP: normalise, mean, normalise; MERU and
HyCoCLIP: mean of the projected text features, then scale and exponential map). An image is assigned
the most similar class (cosine, or negative Lorentzian distance). The papers' metric is mean per-class
accuracy (torchmetrics' macro average in MERU/HyCoCLIP code); top-1 is recorded beside it.
"""

from dataclasses import dataclass

import torch

from hypvl.data.formats.imagefolder import load_image, read_imagefolder
from hypvl.errors import InputError
from hypvl.data.transforms import resize_center_crop
from hypvl.evaluate.features import image_embeddings, text_features
from hypvl.evaluate.metrics import check_finite, mean_per_class_accuracy, top1_accuracy


@dataclass
class ZeroShotResult:
    metrics: dict[str, float]
    n_samples: int


@torch.no_grad()
def class_embeddings(model, tokenizer, class_names: list[str], templates: list[str], batch_size: int,
                     name: str) -> torch.Tensor:
    """(C, D) class embeddings from `templates` filled with each class name, ensembled per method."""
    prompts = [t.format(c) for c in class_names for t in templates]
    feats = text_features(model, tokenizer, prompts, batch_size, name)
    return model.ensemble_prompts(feats.view(len(class_names), len(templates), -1))


@torch.no_grad()
def evaluate_zero_shot(model, tokenizer, root, split: str, templates: list[str], image_size: int,
                       batch_size: int, name: str, class_names: list[str] | None = None) -> ZeroShotResult:
    """Classify every image of the image-folder split `root/split`; class names from the folder's
    classnames.txt unless given (the catalog's, for real datasets)."""
    dataset = read_imagefolder(root, split)
    names = class_names or dataset.class_names
    if names is None:
        raise InputError(f"{root}: no classnames.txt and no class names given")
    if len(names) != len(dataset.class_dirs):
        raise InputError(f"{root}: {len(names)} class names for {len(dataset.class_dirs)} class folders")
    classes = class_embeddings(model, tokenizer, names, templates, batch_size, name)
    images = image_embeddings(model, lambda i: load_image(dataset.samples[i][0]), len(dataset.samples),
                              lambda img: resize_center_crop(img, image_size), batch_size, name)
    scores = model.similarity(images, classes)
    check_finite(f"{name} scores", scores)
    target = torch.tensor([label for _, label in dataset.samples])
    metrics = {"mean_per_class_accuracy": mean_per_class_accuracy(scores, target, len(names)),
               "top1": top1_accuracy(scores, target)}
    return ZeroShotResult(metrics, len(dataset.samples))
