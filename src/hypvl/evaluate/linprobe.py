"""Linear probe (MERU Table 7, App. C): logistic regression on frozen visual-trunk features.

Features are the image encoder's output before the projection (the same for every method), of resized and
centre-cropped images (a public model: its own preprocessing, `DualEncoder.eval_view`): the `train` and `val` image
folders `hypvl probe-splits` cuts from a set's source splits by MERU's slices in the catalog (config
`eval.linear_probe_dir`), and the set's test split (the zero-shot classification split, in either layout:
`hypvl.data.formats.classification_split`). The cost C is searched on val (`metrics.linear_probe_c_search`), the probe
refit on train + val and scored on test by mean per-class accuracy (percent) -> `accuracy`; `best_c` and
`val_accuracy` beside it.
"""

from hypvl.data.formats.classification_split import ClassificationSplit, read_classification_split
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import trunk_features
from hypvl.evaluate.metrics.classification import linear_probe_c_search

TRAIN_SPLIT, VAL_SPLIT = "train", "val"


def split_features(ctx: EvalContext, dataset: ClassificationSplit, name: str):
    """((N, width) trunk features, (N,) labels) of one split."""
    import torch

    feats = trunk_features(ctx.model, dataset.load, len(dataset),
                           lambda img: ctx.model.eval_view(img, ctx.image_size, "crop"), ctx.batch_size,
                           f"{name} {dataset.folder.name}")
    return feats, torch.tensor(dataset.labels)


def _folder_classes(dataset: ClassificationSplit) -> tuple | None:
    """The classes an image folder's class folders name in label order (a numbered folder by its number, so `7` and
    `0007` agree); None for a webdataset, whose labels are its records' own."""
    dirs = dataset.class_dirs
    return None if dirs is None else tuple(int(name) if name.isdecimal() else name for name in dirs)


def check_labels_agree(splits: list[ClassificationSplit]) -> None:
    """Refuse splits whose labels would not mean the same classes as the first's: a different class count, or class
    folders naming other classes (compared where both splits are image folders)."""
    first = splits[0]
    for dataset in splits[1:]:
        folders = _folder_classes(dataset), _folder_classes(first)
        if dataset.num_classes != first.num_classes or (None not in folders and folders[0] != folders[1]):
            raise InputError(f"{dataset.folder}: its {dataset.num_classes} classes differ from the "
                             f"{first.num_classes} of {first.folder} (in count or class folders), so their "
                             "labels would not agree")


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Task `linprobe_<dataset>`."""
    name = task.removeprefix("linprobe_")
    probe = ctx.linear_probe_root(name)
    sources = [(probe, TRAIN_SPLIT), (probe, VAL_SPLIT),
               (ctx.classification_root(name), ctx.config["eval"]["classification_split"])]
    splits = [read_classification_split(root, split).first_classes(ctx.config["eval"].get("max_classes"))
              for root, split in sources]
    check_labels_agree(splits)
    train, val, test = (split_features(ctx, dataset, name) for dataset in splits)
    result = linear_probe_c_search(train, val, test)
    return TaskResult({"accuracy": result.test_accuracy, "val_accuracy": result.val_accuracy,
                       "best_c": result.best_c}, len(test[1]))
