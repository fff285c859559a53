"""The smoke world's linear-probe sources (MERU Table 7): each set's source splits, which `hypvl probe-splits`
cuts into the probe's train and val folders by the catalog's slices, as it cuts the real sources.

- Splits and layout: the source splits the catalog's `linear_probe` slices read (`train`, `val`, `validation`,
  `valid`), in the set's catalog `layout`: CLIP_benchmark's webdataset, or for `imagefolder` sets (whose
  slices cut TFDS splits) an image folder with each image named by its record number, as a TFDS split
  materialised in order.
- Order: classes take turns (record r is image r // C of class r mod C), so any C consecutive records hold
  every class and every slice of at least C records holds each class.
- Size: a split the probe reads whole holds `probe_train_per_class` images per class (the train slice's split)
  or `probe_val_per_class` (a split apart for val). A split the slices cut is a scaled-down stand-in
  (`hypvl.data.splits`: a percentage stays a percentage, a record count becomes the same fraction of what
  the slices read) with the fewest records at which every slice holds the same number of images of each class
  (a multiple of C records), at least `probe_train_per_class` in the train slice and one in the others. The
  slices keep the real proportions between them (CIFAR-10's val is a tenth of its train split, RESISC45's train
  and val a tenth each, the other 80% its test slice); balanced, the probe's refit on train + val learns no
  class prior from the smoke world's rounding.
- Pictures: image i of class c of the split the train slice reads comes from stream (set/train/c, i), of a
  split apart for val from (set/val/c, i). The test split is the set's own zero-shot test split
  (`classification`, in the same layout), which the probe reads beside its train and val folders.
"""

import itertools
from pathlib import Path

from hypvl.data.catalog import DatasetInfo, load_dataset_info
from hypvl.data.splits import count_extents
from hypvl.errors import InputError
from hypvl.io import atomic_directory

from .classification import classification_picture, write_split
from .classification_sets import ALL_CLASSIFICATION_SETS
from .settings import WorldSettings, rng_for


def probe_source_sets() -> list[str]:
    """The smoke world's sets with linear-probe slices in the catalog (all but ImageNet)."""
    return [name for name in ALL_CLASSIFICATION_SETS if load_dataset_info(name).linear_probe is not None]


def source_sizes(info: DatasetInfo, classes: int, train_per_class: int, val_per_class: int) -> dict[str, int]:
    """Source split -> its record count in the smoke world, for a set of `classes` classes (module docstring)."""
    train, val = info.linear_probe
    extents = count_extents((train, val), f"{info.path}: linear_probe")
    sizes = {}
    for split in dict.fromkeys((train.split, val.split)):
        cut = [s for s in (train, val) if s.split == split and (s.start or s.stop)]
        if not cut:
            sizes[split] = classes * (train_per_class if split == train.split else val_per_class)
            continue
        if any(not s.indices(10**9, extent=extents.get(split)) for s in cut):
            raise InputError(f"{info.path}: linear_probe slice of {split!r} takes no record")
        needed = {s: classes * train_per_class if s == train else classes for s in cut}
        sizes[split] = next(size for size in itertools.count(classes) if all(
            (count := len(s.indices(size, extent=extents.get(split)))) >= needed[s] and count % classes == 0
            for s in cut))
    return sizes


def write_probe_sources(settings: WorldSettings, name: str, root: Path) -> dict:
    """Write linear-probe set `name`'s source splits under `root/name` in its catalog layout; returns the layout
    and the record count per split."""
    info, spec = load_dataset_info(name), ALL_CLASSIFICATION_SETS[name]
    classes = len(spec.classes)
    sizes = source_sizes(info, classes, settings.probe_train_per_class, settings.probe_val_per_class)
    with atomic_directory(root / name) as folder:  # replaces only sources this step wrote (no old records left)
        for split, size in sizes.items():
            role = "train" if split == info.linear_probe[0].split else "val"
            items = []
            for record in range(size):
                label = spec.classes[record % classes]
                rng = rng_for(settings.seed, f"{name}/{role}/{label}", record // classes)
                items.append((record % classes, classification_picture(rng, spec, label, settings.image_size)))
            write_split(info, folder, split, spec.classes, items, settings.shard_size, record_names=True)
    return {"layout": info.layout, "splits": sizes}
