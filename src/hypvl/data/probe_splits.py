"""Linear-probe splits (MERU Table 7): `<dest>/{train,val,test}` built from a dataset's source splits by
the catalog's slices (`DatasetInfo.probe_splits`, MERU's `meru/evaluation/catalog.py` SPLITS).

The source folder holds one folder per source split (e.g. `train`, `validation`), either in CLIP_benchmark's
webdataset layout (`<source>/<split>/nshards.txt` and shards, `<source>/classnames.txt`; records in shard
order) or as an image folder (`<source>/<split>/<class>/<image>`, as torchvision's Country211 and RenderedSST2
keep them; class names from `<source>/classnames.txt` or the catalog). An image folder sorts its records by
class, not in the source's record order, so it can only be taken whole: a sliced split needs the webdataset. The
result is an image folder per split (`hypvl.data.formats.imagefolder`, labels kept), written beside `dest`
and moved into place once complete. Every split must hold every class, since image-folder labels follow
the class folders.
"""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from PIL import Image

from hypvl.data.catalog import DatasetInfo, load_dataset_info
from hypvl.data.formats import clip_benchmark_wds
from hypvl.data.formats.imagefolder import (
    load_image,
    read_imagefolder,
    write_imagefolder,
)
from hypvl.data.formats.images import decode_image
from hypvl.errors import InputError


def source_records(source: Path, split: str) -> tuple[list[tuple[int, Callable[[], Image.Image]]], list[str] | None,
                                                     bool]:
    """(label, image loader) of every record of source split `split`, the class names if the source gives
    them, and whether the records are in the source's order (webdataset) or sorted by class (image folder)."""
    source = Path(source)
    if (source / split / clip_benchmark_wds.NSHARDS).is_file():
        records = [(sample.label, lambda s=sample: decode_image(s.image, f"{source / split} {s.key}"))
                   for sample in clip_benchmark_wds.iter_clip_benchmark_samples(source, split)]
        return records, list(clip_benchmark_wds.read_classnames(source)), True
    dataset = read_imagefolder(source, split)
    return [(label, lambda p=path: load_image(p)) for path, label in dataset.samples], dataset.class_names, False


def build_probe_splits(info: DatasetInfo, source: Path, dest: Path) -> dict[str, int]:
    """Write `dest/{train,val,test}` from `source` by `info`'s slices; returns the image count per split."""
    source, dest = Path(source), Path(dest)
    partial = dest.with_name(f"{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    records = {}
    sizes = {}
    for split, spec in info.probe_splits.items():
        if spec.split not in records:
            records[spec.split] = source_records(source, spec.split)
        rows, names, ordered = records[spec.split]
        if not ordered and (spec.start or spec.stop):
            raise InputError(f"{source / spec.split}: an image folder keeps no record order, so {info.name}'s "
                             f"{split} slice {spec} needs the split in CLIP_benchmark's webdataset layout")
        chosen = [rows[i] for i in spec.indices(len(rows), f"{source / spec.split} ({info.name} {split}: {spec})")]
        names = names or list(info.class_names)
        missing = sorted(set(range(len(names))) - {label for label, _ in chosen})
        if missing:
            raise InputError(f"{source / spec.split}: {info.name} {split} split {spec} holds no image of "
                             f"class(es) {missing[:10]}")
        write_imagefolder(partial, split, names, ((label, load()) for label, load in chosen))
        sizes[split] = len(chosen)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(partial, dest)
    return sizes


def _run(args) -> None:
    """`hypvl probe-splits NAME --source DIR --dest DIR`: print the image count of each split written."""
    sizes = build_probe_splits(load_dataset_info(args.name), args.source, args.dest)
    for split, count in sizes.items():
        print(f"{split}\t{count}")


def add_commands(subparsers) -> None:
    """Register `probe-splits`: build a dataset's linear-probe train/val/test folders from its source splits."""
    parser = subparsers.add_parser("probe-splits", help="build MERU's linear-probe splits of one catalog dataset")
    parser.add_argument("name", help="catalog dataset name (e.g. cifar10)")
    parser.add_argument("--source", required=True, help="folder of the source splits (webdataset or image folder)")
    parser.add_argument("--dest", required=True, help="output folder, e.g. <data_dir>/eval/classification/<name>")
    parser.set_defaults(func=_run)
