"""VL-CheckList annotations and corpus YAMLs (om-ai-lab/VL-CheckList).

An annotation file (`data/Object/...`, `data/Attribute/...`, `data/Relation/...`) is a JSON list of
`[image_relpath, {"POS": [caption, ...], "NEG": [caption, ...]}]`; image paths are relative to an
image folder (VL-CheckList's `vg/`, `swig/`, `hake/`).
A corpus YAML (`corpus/v1/<Type>/<...>/<source>.yaml`) names one annotation file and its image
folder: `ANNO_PATH`, `IMG_ROOT` (both relative to the VL-CheckList root, the folder holding
`corpus/`) and `TYPE: "TUPLE_JSON"`. Upstream silently skips missing images; here they are errors
unless `check_images=False`.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from hypvl.errors import InputError
from hypvl.io import atomic_write
from hypvl.yaml_text import error_parts, safe_load

from .common import (
    Where,
    check_kind,
    field,
    load_json,
    read_text,
    resolve_image,
    string_list,
    write_json,
)

CORPUS_TYPE = "TUPLE_JSON"


@dataclass(frozen=True)
class CheckListItem:
    """An image with its positive and negative (hard-negative) captions; evaluation uses the first of each."""

    image: Path
    positives: tuple[str, ...]
    negatives: tuple[str, ...]


@dataclass(frozen=True)
class CheckListCorpus:
    """One corpus YAML: its annotation file and image folder (resolved) and its TYPE."""

    annotation: Path
    image_root: Path
    type: str


def read_vlchecklist(path: Path, image_root: Path | None = None, check_images: bool = True) -> list[CheckListItem]:
    """Items of one annotation file; `image_root` defaults to the file's folder."""
    path = Path(path)
    root = path.parent if image_root is None else Path(image_root)
    data = load_json(path)
    check_kind(data, list, "the top level", Where(path))
    items = []
    for index, entry in enumerate(data):
        where = Where(path, index)
        check_kind(entry, list, "the record", where)
        if len(entry) != 2:
            raise where.error(f"should be [image_path, {{POS, NEG}}], got {len(entry)} elements")
        relative = check_kind(entry[0], str, "the image path", where)
        captions = entry[1]
        positives = string_list(field(captions, "POS", list, where), "POS", where)
        negatives = string_list(field(captions, "NEG", list, where), "NEG", where)
        items.append(CheckListItem(resolve_image(root, relative, where, check_images), positives, negatives))
    return items


def write_vlchecklist(path: Path, items: Sequence[CheckListItem], image_root: Path | None = None) -> None:
    """Write `items` (images under `image_root`, default the file's folder) as an annotation file."""
    root = Path(path).parent if image_root is None else Path(image_root)
    records = [
        [Path(item.image).relative_to(root).as_posix(), {"POS": list(item.positives), "NEG": list(item.negatives)}]
        for item in items
    ]
    write_json(path, records)


def default_root(yaml_path: Path) -> Path:
    """The VL-CheckList root of a corpus YAML: the parent of its nearest `corpus` ancestor folder."""
    for folder in Path(yaml_path).parents:
        if folder.name == "corpus":
            return folder.parent
    raise Where(Path(yaml_path)).error("not under a 'corpus' folder; pass the VL-CheckList root explicitly")


def read_corpus(path: Path, root: Path | None = None) -> CheckListCorpus:
    """Parse one corpus YAML, resolving ANNO_PATH and IMG_ROOT against `root` (default: `default_root`)."""
    path = Path(path)
    base = default_root(path) if root is None else Path(root)
    try:
        config = safe_load(read_text(path))
    except yaml.YAMLError as exc:
        at, problem = error_parts(path, exc)
        raise InputError(f"{at}: malformed YAML ({problem})") from None
    where = Where(path)
    corpus_type = field(config, "TYPE", str, where)
    if corpus_type != CORPUS_TYPE:
        raise where.error(f"TYPE should be '{CORPUS_TYPE}', got '{corpus_type}'")
    annotation = base / field(config, "ANNO_PATH", str, where)
    return CheckListCorpus(annotation, base / field(config, "IMG_ROOT", str, where), corpus_type)


def read_vlchecklist_corpus(
    path: Path, root: Path | None = None, check_images: bool = True
) -> tuple[CheckListCorpus, list[CheckListItem]]:
    """A corpus YAML and the items of the annotation file it names."""
    corpus = read_corpus(path, root)
    return corpus, read_vlchecklist(corpus.annotation, corpus.image_root, check_images)


def write_corpus(path: Path, annotation: Path, image_root: Path, root: Path | None = None) -> None:
    """Write a corpus YAML naming `annotation` and `image_root`, relative to `root` (default: `default_root`)."""
    base = default_root(path) if root is None else Path(root)
    config = {
        "ANNO_PATH": Path(annotation).relative_to(base).as_posix(),
        "IMG_ROOT": Path(image_root).relative_to(base).as_posix() + "/",
        "TYPE": CORPUS_TYPE,
    }
    with atomic_write(path, mode="w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
