"""COCO captions annotations (`captions_val2017.json`), MERU/HyCoCLIP's COCO retrieval set.

Layout (MERU's `datasets/coco/`): `annotations/captions_val2017.json` and the images in `val2017/`,
so the default image folder is `<json folder>/../val2017`. The JSON holds `images` (`id`,
`file_name`, `width`, `height`) and `annotations` (`id`, `image_id`, `caption`), 5 to 7 captions
per image; every image must have at least one caption.
"""

from collections.abc import Sequence
from pathlib import Path

from .common import (
    CaptionedImage,
    Where,
    field,
    image_size,
    load_json,
    resolve_image,
    write_json,
)


def default_image_root(json_path: Path) -> Path:
    """`<json folder>/../val2017`, where MERU's layout keeps the images."""
    return Path(json_path).parent.parent / "val2017"


def read_coco_captions(path: Path, image_root: Path | None = None, check_images: bool = True) -> list[CaptionedImage]:
    """Images in file order, each with its captions in annotation order."""
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    data = load_json(path)
    top = Where(path)
    images = field(data, "images", list, top)
    annotations = field(data, "annotations", list, top)
    files: dict[int, str] = {}
    for index, entry in enumerate(images):
        where = top.at(f"images[{index}]")
        image_id = field(entry, "id", int, where)
        if image_id in files:
            raise where.error(f"duplicate image id {image_id}")
        files[image_id] = field(entry, "file_name", str, where)
    captions: dict[int, list[str]] = {image_id: [] for image_id in files}
    for index, entry in enumerate(annotations):
        where = top.at(f"annotations[{index}]")
        image_id = field(entry, "image_id", int, where)
        if image_id not in captions:
            raise where.error(f"image_id {image_id} is not among the images")
        captions[image_id].append(field(entry, "caption", str, where))
    records = []
    for index, (image_id, file_name) in enumerate(files.items()):
        where = top.at(f"images[{index}] (id {image_id})")
        if not captions[image_id]:
            raise where.error("image has no captions")
        records.append(CaptionedImage(resolve_image(root, file_name, where, check_images), tuple(captions[image_id])))
    return records


def write_coco_captions(path: Path, items: Sequence[CaptionedImage], image_root: Path | None = None) -> None:
    """Write `items` (images under `image_root`, default as for reading) as a COCO captions JSON; ids count from 1."""
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    images, annotations = [], []
    for image_id, item in enumerate(items, start=1):
        width, height = image_size(item.image)
        file_name = Path(item.image).relative_to(root).as_posix()
        images.append({"id": image_id, "file_name": file_name, "width": width, "height": height})
        for caption in item.captions:
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "caption": caption})
    write_json(path, {"info": {"description": "hypvl"}, "licenses": [], "images": images, "annotations": annotations})
