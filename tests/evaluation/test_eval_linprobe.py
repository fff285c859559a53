"""Linear probe: trunk features (before the projection) into scikit-learn, C searched on val and the probe
refit on train + val, against scikit-learn run directly on hand-computed features; train and val read from the
linear-probe folders and test from the classification folder; NaN refusal; `hypvl evaluate linprobe` on what the
probe step cuts from the smoke world's sources."""

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from helpers.eval_sets import ROOTS, _folder
from helpers.evaluation import SIZE, context, random_image, run_group
from hypvl.data.catalog import load_dataset_info
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.imagefolder import load_image, read_imagefolder, write_imagefolder
from hypvl.data.probe_splits import build_probe_splits
from hypvl.worlds.smoke.classification import write_classification_set
from hypvl.worlds.smoke.classification_sets import ALL_CLASSIFICATION_SETS
from hypvl.worlds.smoke.probe_sources import write_probe_sources
from hypvl.worlds.smoke.settings import WorldSettings
from hypvl.data.transforms import resize_center_crop, to_tensor_batch
from hypvl.errors import InputError
from hypvl.evaluate import linprobe
from hypvl.evaluate.metrics.checks import NonFiniteEmbeddingError


def _features(model, tmp_path, split):
    dataset = read_imagefolder(tmp_path / ROOTS[split] / "cifar10", split)
    with torch.no_grad():
        pixels = to_tensor_batch([resize_center_crop(load_image(p), SIZE) for p, _ in dataset.samples])
        feats = model.visual((pixels - model.pixel_mean) / model.pixel_std)
    return feats.double().numpy(), np.array([t for _, t in dataset.samples])


@pytest.mark.parametrize("method", ["clip", "meru"])
def test_probe_matches_sklearn_on_trunk_features(tmp_path, method):
    _folder(tmp_path)
    ctx = context(method, tmp_path)
    result = linprobe.run(ctx, "linprobe_cifar10")
    (train_x, train_y), (val_x, val_y), (test_x, test_y) = (_features(ctx.model, tmp_path, s)
                                                            for s in ("train", "val", "test"))
    val_scores = {c: balanced_accuracy_score(val_y, LogisticRegression(C=c, random_state=0, max_iter=1000)
                                             .fit(train_x, train_y).predict(val_x))
                  for c in (1e-6, 1e-4, 1e-2, 1.0, 1e2, 1e4, 1e6)}
    assert 100 * max(val_scores.values()) <= result.metrics["val_accuracy"] + 1e-6  # refinement never loses
    probe = LogisticRegression(C=result.metrics["best_c"], random_state=0, max_iter=1000)
    probe.fit(np.concatenate([train_x, val_x]), np.concatenate([train_y, val_y]))
    assert result.n_samples == 9
    assert result.metrics["accuracy"] == pytest.approx(100 * balanced_accuracy_score(test_y, probe.predict(test_x)),
                                                       abs=1e-6)


def test_nan_features_are_an_error(tmp_path):
    _folder(tmp_path)
    ctx = context("clip", tmp_path)
    with torch.no_grad():
        ctx.model.visual.vit.norm.bias.fill_(float("nan"))
    with pytest.raises(NonFiniteEmbeddingError, match="cifar10 train trunk features"):
        linprobe.run(ctx, "linprobe_cifar10")


def test_probe_and_test_folders_with_other_classes_are_an_error(tmp_path):
    _folder(tmp_path)
    write_imagefolder(tmp_path / "classification" / "cifar10", "test", ["a", "b", "c", "d"],
                      [(label, random_image(torch.Generator().manual_seed(label))) for label in range(4)])
    with pytest.raises(InputError, match=r"classification/cifar10/test: its 4 classes differ from the 3 of "):
        linprobe.run(context("clip", tmp_path), "linprobe_cifar10")


def test_class_folders_agree_by_the_class_they_name(tmp_path):
    """Numbered class folders name their label (the probe step's `0007` and a prepare step's `7` agree); named ones
    must match by name."""
    def split(name, folders):
        images = [(label, random_image(torch.Generator().manual_seed(label))) for label in range(len(folders))]
        write_imagefolder(tmp_path / name, "s", list(folders), images)
        for label, folder in enumerate(folders):
            (tmp_path / name / "s" / f"{label:04d}").rename(tmp_path / name / "s" / folder)
        return read_classification_split(tmp_path / name, "s")

    padded, plain = split("padded", ["0000", "0001", "0002"]), split("plain", ["0", "1", "2"])
    linprobe.check_labels_agree([padded, plain])
    with pytest.raises(InputError, match=r"named2/s: its 3 classes differ from the 3 of .*named1/s"):
        linprobe.check_labels_agree([split("named1", ["cat", "dog", "eel"]), split("named2", ["cat", "dog", "fox"])])


def test_evaluate_linprobe_runs_on_the_probe_step_output(tmp_path):
    """`hypvl evaluate linprobe` on the train/val folders the probe step cuts from the smoke world's sources (DTD's
    webdataset; fewer images than feature dimensions, so that the probe's fits converge fast), beside the smoke
    world's test folder."""
    settings = WorldSettings(per_class=2, probe_train_per_class=2, probe_val_per_class=1, image_size=32)
    write_classification_set(settings, "dtd", tmp_path / "classification")
    write_probe_sources(settings, "dtd", tmp_path / "sources")
    build_probe_splits(load_dataset_info("dtd"), tmp_path / "sources" / "dtd", tmp_path / "linear_probe" / "dtd",
                       scaled=True)
    record = run_group(tmp_path, "meru", "linprobe", {}, tmp_path, tasks=["linprobe_dtd"])["linprobe_dtd"]
    assert record["n_samples"] == settings.per_class * len(ALL_CLASSIFICATION_SETS["dtd"].classes)
    assert 0 <= record["metrics"]["accuracy"] <= 100 and record["metrics"]["best_c"] > 0
