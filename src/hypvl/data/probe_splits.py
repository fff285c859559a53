"""Linear-probe splits (MERU Table 7): `<dest>/{train,val}` (and on request `test`) built from a dataset's
source splits by the catalog's slices (`DatasetInfo.probe_splits`, MERU's `meru/evaluation/catalog.py` SPLITS).

The source folder holds one folder per source split (e.g. `train`, `validation`), each read as a classification
split (`hypvl.data.formats.classification_split`): in CLIP_benchmark's webdataset layout
(`<source>/<split>/nshards.txt` and shards, `<source>/classnames.txt`; records in shard order) or as an image
folder (`<source>/<split>/<class>/<image>`, as torchvision's Country211 and RenderedSST2 keep them; class names
from `<source>/classnames.txt` or the catalog). An image folder sorts its records by
class, so it can only be taken whole, unless its images are named by record number (a TFDS split materialised
in its order, `hypvl.data.formats.imagefolder.in_record_order`). With `scaled` (the smoke world's sources) each
source split is a scaled-down stand-in and record counts are taken as fractions (`hypvl.data.splits`). The
result is an image folder per split (`hypvl.data.formats.imagefolder`, labels kept), written beside `dest` and
moved into place once complete (`hypvl.io.atomic_directory`: a `dest` holding anything this step did not write, e.g.
the folder of every probe set, is refused, never replaced). Every split must hold every class, since image-folder
labels follow the class folders. With `max_classes` (config `eval.max_classes`, the pilot's class cap) each slice
keeps the records of the first `max_classes` classes only, and only those must all be there.
"""

from collections.abc import Sequence
from pathlib import Path

from hypvl.data.catalog import PROBE_SPLITS, DatasetInfo, load_dataset_info
from hypvl.data.formats.classification_split import read_classification_split
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.data.splits import SplitSlice, count_extents
from hypvl.errors import InputError
from hypvl.io import atomic_directory

BUILDABLE = (*PROBE_SPLITS, "test")


def build_probe_splits(info: DatasetInfo, source: Path, dest: Path, splits: Sequence[str] = PROBE_SPLITS,
                       scaled: bool = False, max_classes: int | None = None) -> dict[str, int]:
    """Write `dest/<split>` for each of `splits` (train, val, test) from `source` by `info`'s slices, the
    source taken as a scaled-down stand-in with `scaled`, each split capped at its first `max_classes` classes;
    returns the image count per split."""
    source, dest = Path(source), Path(dest)
    unknown = sorted(set(splits) - set(BUILDABLE))
    if unknown:
        raise InputError(f"probe splits {unknown}: the buildable splits are {list(BUILDABLE)}")
    slices = info.probe_splits
    extents = count_extents([slices[split] for split in PROBE_SPLITS], f"{info.path}: linear_probe") if scaled else {}
    with atomic_directory(dest) as folder:  # an existing dest holding anything it did not write is refused first
        return _write_splits(info, {split: slices[split] for split in splits}, source, folder, extents, max_classes)


def _write_splits(info: DatasetInfo, slices: dict[str, SplitSlice], source: Path, out: Path,
                  extents: dict[str, int], max_classes: int | None) -> dict[str, int]:
    """Write `out/<split>` for each split of `slices` from its slice of `source`; returns the image count per split."""
    sources = {}
    sizes = {}
    for split, spec in slices.items():
        if spec.split not in sources:
            sources[spec.split] = read_classification_split(source, spec.split)
        records = sources[spec.split]
        if not records.ordered and (spec.start or spec.stop):
            raise InputError(f"{source / spec.split}: an image folder not named by record number keeps no record "
                             f"order, so {info.name}'s {split} slice {spec} needs the split in CLIP_benchmark's "
                             "webdataset layout or its images named <record>.<ext>")
        where = f"{source / spec.split} ({info.name} {split}: {spec})"
        names = list(records.class_names or info.class_names)[:max_classes]
        chosen = [i for i in spec.indices(len(records), where, extents.get(spec.split))
                  if records.labels[i] < len(names)]
        missing = sorted(set(range(len(names))) - {records.labels[i] for i in chosen})
        if missing:
            raise InputError(f"{source / spec.split}: {info.name} {split} split {spec} holds no image of "
                             f"class(es) {missing[:10]}")
        write_imagefolder(out, split, names, ((records.labels[i], records.load(i)) for i in chosen))
        sizes[split] = len(chosen)
    return sizes


def _run(args) -> None:
    """`hypvl probe-splits NAME --source DIR --dest DIR`: print the image count of each split written."""
    sizes = build_probe_splits(load_dataset_info(args.name), args.source, args.dest, args.splits, args.scaled_source,
                               args.max_classes)
    for split, count in sizes.items():
        print(f"{split}\t{count}")


def add_commands(subparsers) -> None:
    """Register `probe-splits`: build a dataset's linear-probe train/val folders from its source splits."""
    parser = subparsers.add_parser("probe-splits", help="build MERU's linear-probe splits of one catalog dataset")
    parser.add_argument("name", help="catalog dataset name (e.g. cifar10)")
    parser.add_argument("--source", required=True, help="folder of the source splits (webdataset or image folder), "
                                                        "e.g. <data_dir>/<eval.probe_source_dir>/<name>")
    parser.add_argument("--dest", required=True, help="output folder, e.g. <data_dir>/<eval.linear_probe_dir>/<name>")
    parser.add_argument("--splits", nargs="+", choices=BUILDABLE, default=list(PROBE_SPLITS),
                        help="splits to build (default: train val; test is the catalog's test slice)")
    parser.add_argument("--scaled-source", action="store_true",
                        help="the source is a scaled-down stand-in (the smoke world): record counts become "
                             "fractions of what the linear-probe slices read (hypvl.data.splits)")
    parser.add_argument("--max-classes", type=int, metavar="N",
                        help="keep the records of the first N classes only (config eval.max_classes)")
    parser.set_defaults(func=_run)
