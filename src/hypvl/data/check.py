"""`hypvl data check FORMAT PATH`: parse a file in one of the real formats and show what it holds."""

import argparse
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from hypvl.errors import InputError
from hypvl.io import json_text

from .formats import (
    breeds,
    cc3m,
    clip_benchmark_wds,
    coco_captions,
    coco_instances,
    flickr30k,
    grit,
    grounded,
    hierarcaps,
    hyperlex,
    imagefolder,
    redcaps,
    vg_attribution,
    vlchecklist,
    wordnet_isa,
    yfcc,
)
from .formats.images import decode_image

Reader = Callable[[Path, bool, Path | None], Iterable]



def decoded_shards(read: Callable[[Path], Iterable], source: Path, check_images: bool) -> Iterator:
    """Records of every shard of `source` read by `read` (all at once: a key in two shards is an error); with
    `check_images`, each image they hold (a grounded record's box crops too) is decoded, a corrupt one named by
    shard, key and member."""
    for record in read(source):
        if check_images:
            shard = getattr(record, "shard", None) or getattr(record, "source", None) or source
            images = [("image", record.image)]
            images += [(f"box {i}", crop) for i, (crop, _) in enumerate(getattr(record, "boxes", []))]
            for part, data in images:
                decode_image(data, f"{shard}: key {record.key} ({part})")
        yield record


def _yfcc_skip(check_images: bool) -> Callable[[str, str], None]:
    """The YFCC15M reader's `skip`: a row without text is an error; so is one without its photo, unless images are
    not checked (about 1% of the real list has none upstream)."""

    def skip(reason: str, message: str) -> None:
        if check_images or reason != "no_image":
            raise InputError(message)

    return skip


# Format name -> reader(path, check_images, image_root) -> records. Text formats hold no image paths.
FORMATS: dict[str, Reader] = {
    "redcaps": lambda path, check, root: decoded_shards(redcaps.iter_redcaps, path, check),
    "grit": lambda path, check, root: decoded_shards(grit.iter_grit, path, check),
    "cc3m": lambda path, check, root: decoded_shards(cc3m.iter_cc3m, path, check),
    "yfcc": lambda path, check, root: yfcc.iter_yfcc(path, _yfcc_skip(check)),
    "grounded": lambda path, check, root: decoded_shards(grounded.iter_grounded, path, check),
    "imagefolder": lambda path, check, root: imagefolder.iter_imagefolder(path, check),
    "clip_benchmark_wds": lambda path, check, root: clip_benchmark_wds.read_clip_benchmark_wds(path).samples,
    "coco_captions": lambda path, check, root: coco_captions.read_coco_captions(path, root, check),
    "flickr30k": lambda path, check, root: flickr30k.read_flickr30k(path, "test", root, check),
    "coco_instances": lambda path, check, root: coco_instances.read_coco_instances(path, root, check).images,
    "vlchecklist": lambda path, check, root: vlchecklist.read_vlchecklist(path, root, check),
    "vlchecklist_corpus": lambda path, check, root: vlchecklist.read_vlchecklist_corpus(path, None, check)[1],
    "vg_attribution": lambda path, check, root: vg_attribution.read_vg_attribution(path, root, check),
    "hierarcaps_test": lambda path, check, root: hierarcaps.read_hierarcaps_test(path, root, check),
    "hierarcaps_train": lambda path, check, root: hierarcaps.read_hierarcaps_train(path),
    "wordnet_isa": lambda path, check, root: wordnet_isa.read_wordnet_isa(path),
    "hyperlex": lambda path, check, root: hyperlex.read_hyperlex(path),
    "breeds": lambda path, check, root: breeds.read_breeds_hierarchy(path).classes,
    "breeds_split": lambda path, check, root: breeds.read_breeds_split(path),
}


def check(fmt: str, path, check_images: bool = True, image_root=None) -> tuple[int, object]:
    """(record count, first record or None) of `path` read as format `fmt`; malformed input raises InputError."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format '{fmt}'; known formats: {', '.join(sorted(FORMATS))}")
    count, first = 0, None
    for record in FORMATS[fmt](Path(path), check_images, None if image_root is None else Path(image_root)):
        if count == 0:
            first = record
        count += 1
    return count, first


def describe(record) -> str:
    """A readable JSON rendering of a record: paths as strings, image bytes as '<N bytes>'."""

    def plain(value):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, bytes):
            return f"<{len(value)} bytes>"
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return {name: plain(item) for name, item in zip(value._fields, value)}
        if isinstance(value, (list, tuple)):
            return [plain(item) for item in value]
        if isinstance(value, dict):
            return {str(key): plain(item) for key, item in value.items()}
        return value

    return json_text(plain(record), f"record {getattr(record, 'key', '')}".rstrip(), indent=2, ensure_ascii=False)


def run_check(args: argparse.Namespace) -> int:
    """Print the record count and the first record; malformed input raises InputError (one line, exit 1)."""
    count, first = check(args.format, args.path, not args.no_check_images, args.image_root)
    print(f"{count} records")
    if count:
        print("first record:")
        print(describe(first))
    return 0


def add_commands(subparsers) -> None:
    """Register `data check FORMAT PATH` on the top-level `hypvl` subparsers."""
    data = subparsers.add_parser("data", help="inspect data in its real on-disk formats")
    commands = data.add_subparsers(dest="data_command", required=True)
    parser = commands.add_parser("check", help="parse a file, print its record count and first record")
    parser.add_argument("format", choices=sorted(FORMATS), help="the on-disk format")
    parser.add_argument("path", type=Path, help="file, shard, shard folder or dataset folder, as the format needs")
    parser.add_argument("--image-root", type=Path, default=None, help="image folder (default: the format's layout)")
    parser.add_argument("--no-check-images", action="store_true",
                        help="do not require referenced image files to exist, nor decode shard images")
    parser.set_defaults(func=run_check)
