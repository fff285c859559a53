"""Zero-shot classification and the linear probe read a test split in either layout: `hypvl evaluate` on a
CLIP_benchmark webdataset and on an image folder holding the same images (same labels, same class names) gives
the same numbers."""

import pytest
import torch

from helpers.evaluation import random_image, run_group
from hypvl.data.formats.clip_benchmark_wds import ClipBenchmarkDataset, LabelledImage, write_clip_benchmark_wds
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.data.formats.images import encode_image

NAMES = ["a", "b", "c"]


def _items(generator, count: int):
    """`count` (label, image) pairs, class by class, each class marked with a patch of its own colour."""
    items = []
    for i in range(count):
        label = i * len(NAMES) // count
        image = random_image(generator)
        image.paste(((90 * label) % 256, 60, 255 - 90 * label), (2, 2, 18, 16))
        items.append((label, image))
    return items


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory):
    """Two data dirs, the same probe train/val folders in each; the cifar10 test split as a CLIP_benchmark
    webdataset (4 records a shard) in one and as an image folder in the other."""
    g = torch.Generator().manual_seed(11)
    train, val, test = _items(g, 12), _items(g, 6), _items(g, 10)
    dirs = {layout: tmp_path_factory.mktemp(layout) for layout in ("clip_benchmark_wds", "imagefolder")}
    for data_dir in dirs.values():
        write_imagefolder(data_dir / "linear_probe" / "cifar10", "train", NAMES, train)
        write_imagefolder(data_dir / "linear_probe" / "cifar10", "val", NAMES, val)
    samples = tuple(LabelledImage(f"s{r:07d}", encode_image(image, "PNG"), label) for r, (label, image) in enumerate(test))
    write_clip_benchmark_wds(dirs["clip_benchmark_wds"] / "classification" / "cifar10",
                             ClipBenchmarkDataset(tuple(NAMES), ("a photo of a {c}.",), samples), "test", 4, "png")
    write_imagefolder(dirs["imagefolder"] / "classification" / "cifar10", "test", NAMES, test)
    assert (dirs["clip_benchmark_wds"] / "classification" / "cifar10" / "test" / "2.tar").is_file()
    return dirs


@pytest.mark.parametrize("group, task, metrics", [
    ("zeroshot", "zs_cifar10", {"mean_per_class_accuracy", "top1"}),
    ("linprobe", "linprobe_cifar10", {"accuracy", "val_accuracy", "best_c"}),
])
def test_either_layout_gives_the_same_numbers(data_dirs, tmp_path, group, task, metrics):
    records = {layout: run_group(tmp_path / layout, "meru", group, {}, data_dir, tasks=[task])[task]
               for layout, data_dir in data_dirs.items()}
    wds, folder = records["clip_benchmark_wds"], records["imagefolder"]
    assert set(wds["metrics"]) >= metrics
    assert wds["metrics"] == folder["metrics"] and wds["n_samples"] == folder["n_samples"] == 10
