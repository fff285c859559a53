"""Linear probe (MERU Table 7, App. C): logistic regression on frozen visual-trunk features.

Features are the image encoder's output before the projection (the same for every method), of
resized and centre-cropped images of the `train`, `val` and test splits of an image-folder set (at paper
scale built by `hypvl probe-splits` from MERU's slices in the catalog; the smoke world writes its own). The
cost C is searched on val (`metrics.linear_probe_c_search`), the probe refit on train + val and
scored on test by mean per-class accuracy (percent) -> `accuracy`; `best_c` and `val_accuracy` beside it.
"""

from hypvl.data.formats.imagefolder import load_image, read_imagefolder
from hypvl.data.transforms import resize_center_crop
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import trunk_features
from hypvl.evaluate.metrics import linear_probe_c_search

TRAIN_SPLIT, VAL_SPLIT = "train", "val"


def split_features(ctx: EvalContext, root, split: str, name: str):
    """((N, width) trunk features, (N,) labels) of one split."""
    import torch

    dataset = read_imagefolder(root, split)
    feats = trunk_features(ctx.model, lambda i: load_image(dataset.samples[i][0]), len(dataset.samples),
                           lambda img: resize_center_crop(img, ctx.image_size), ctx.batch_size, f"{name} {split}")
    return feats, torch.tensor([label for _, label in dataset.samples])


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Task `linprobe_<dataset>`."""
    name = task.removeprefix("linprobe_")
    root = ctx.classification_root(name)
    train, val, test = (split_features(ctx, root, split, name)
                        for split in (TRAIN_SPLIT, VAL_SPLIT, ctx.config["eval"]["classification_split"]))
    result = linear_probe_c_search(train, val, test)
    return TaskResult({"accuracy": result.test_accuracy, "val_accuracy": result.val_accuracy,
                       "best_c": result.best_c}, len(test[1]))
