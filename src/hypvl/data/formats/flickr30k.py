"""Flickr30K with Karpathy's splits (`dataset_flickr30k.json`), the retrieval test set of MERU/HyCoCLIP.

Layout (MERU's `datasets/flickr30k/`): `dataset_flickr30k.json` beside the folder `flickr30k_images/`.
The JSON is `{"dataset": "flickr30k", "images": [...]}`; each image has `filename`, `split`
(train | val | test | restval), `imgid`, `sentids` and `sentences` (`raw`, `tokens`, `imgid`, `sentid`).
The reported split is `test` (1,000 images, 5 captions each).
"""

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from .common import CaptionedImage, Where, field, load_json, resolve_image, write_json

SPLITS = ("train", "val", "test", "restval")


def default_image_root(json_path: Path) -> Path:
    """`<json folder>/flickr30k_images`, where MERU's layout keeps the images."""
    return Path(json_path).parent / "flickr30k_images"


def read_flickr30k(
    path: Path, split: str = "test", image_root: Path | None = None, check_images: bool = True
) -> list[CaptionedImage]:
    """Images of `split` in file order with their `sentences[*].raw` captions; all entries are validated."""
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    top = Where(path)
    records = []
    for index, entry in enumerate(field(load_json(path), "images", list, top)):
        where = top.at(f"images[{index}]")
        filename = field(entry, "filename", str, where)
        entry_split = field(entry, "split", str, where)
        if entry_split not in SPLITS:
            raise where.error(f"split '{entry_split}' is not one of {SPLITS}")
        sentences = field(entry, "sentences", list, where)
        if not sentences:
            raise where.error("field 'sentences' is empty")
        captions = tuple(
            field(sentence, "raw", str, where.at(f"images[{index}].sentences[{i}]"))
            for i, sentence in enumerate(sentences)
        )
        if entry_split == split:
            records.append(CaptionedImage(resolve_image(root, filename, where, check_images), captions))
    return records


def write_flickr30k(path: Path, splits: Mapping[str, Sequence[CaptionedImage]], image_root: Path | None = None) -> None:
    """Write images per split (images under `image_root`, default as for reading) in Karpathy's layout."""
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    images, sentence_id = [], 0
    for split, items in splits.items():
        if split not in SPLITS:
            raise ValueError(f"split {split!r} is not one of {SPLITS}")
        for item in items:
            image_id = len(images)
            sentences = []
            for caption in item.captions:
                tokens = re.findall(r"[a-z0-9]+", caption.lower())
                sentences.append({"tokens": tokens, "raw": caption, "imgid": image_id, "sentid": sentence_id})
                sentence_id += 1
            images.append(
                {
                    "sentids": [s["sentid"] for s in sentences],
                    "imgid": image_id,
                    "sentences": sentences,
                    "split": split,
                    "filename": Path(item.image).relative_to(root).as_posix(),
                }
            )
    write_json(path, {"images": images, "dataset": "flickr30k"})
