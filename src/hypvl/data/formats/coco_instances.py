"""COCO instances annotations (`instances_val2017.json`) and the 48 base / 17 novel zero-shot split.

The JSON holds `images` (`id`, `file_name`, `width`, `height`), `categories` (`id`, `name`,
`supercategory`) and `annotations` (`id`, `image_id`, `category_id`, `bbox` = [x, y, w, h] in
pixels, `area`, `iscrowd`; `segmentation` is not read). Default image folder, as in the COCO
download: `<json folder>/../val2017`.

The split is Bansal et al., "Zero-Shot Object Detection", ECCV 2018: 48 seen (base) and 17 unseen
(novel) COCO classes, as later used by OVR-CNN (Zareian et al., CVPR 2021) and RegionCLIP (Zhong et
al., CVPR 2022; `COCO_48_17_SEEN_CLASSES` / `COCO_48_17_UNSEEN_CLASSES` in microsoft/RegionCLIP),
which HyCoCLIP's detection table follows. Names are COCO 2017 category names; ids are COCO ids.
"""

from dataclasses import dataclass
from pathlib import Path

from .common import Where, check_kind, field, load_json, resolve_image, write_json

BANSAL_BASE_CATEGORIES = (
    "person", "bicycle", "car", "motorcycle", "train", "truck", "boat", "bench", "bird", "horse",
    "sheep", "bear", "zebra", "giraffe", "backpack", "handbag", "suitcase", "frisbee", "skis", "kite",
    "surfboard", "bottle", "fork", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli",
    "carrot", "pizza", "donut", "chair", "bed", "toilet", "tv", "laptop", "mouse", "remote",
    "microwave", "oven", "toaster", "refrigerator", "book", "clock", "vase", "toothbrush",
)  # fmt: skip
BANSAL_NOVEL_CATEGORIES = (
    "airplane", "bus", "cat", "dog", "cow", "elephant", "umbrella", "tie", "snowboard", "skateboard",
    "cup", "knife", "cake", "couch", "keyboard", "sink", "scissors",
)  # fmt: skip
COCO_CATEGORY_IDS = {
    "person": 1, "bicycle": 2, "car": 3, "motorcycle": 4, "airplane": 5, "bus": 6, "train": 7,
    "truck": 8, "boat": 9, "bench": 15, "bird": 16, "cat": 17, "dog": 18, "horse": 19, "sheep": 20,
    "cow": 21, "elephant": 22, "bear": 23, "zebra": 24, "giraffe": 25, "backpack": 27, "umbrella": 28,
    "handbag": 31, "tie": 32, "suitcase": 33, "frisbee": 34, "skis": 35, "snowboard": 36, "kite": 38,
    "skateboard": 41, "surfboard": 42, "bottle": 44, "cup": 47, "fork": 48, "knife": 49, "spoon": 50,
    "bowl": 51, "banana": 52, "apple": 53, "sandwich": 54, "orange": 55, "broccoli": 56, "carrot": 57,
    "pizza": 59, "donut": 60, "cake": 61, "chair": 62, "couch": 63, "bed": 65, "toilet": 70, "tv": 72,
    "laptop": 73, "mouse": 74, "remote": 75, "keyboard": 76, "microwave": 78, "oven": 79, "toaster": 80,
    "sink": 81, "refrigerator": 82, "book": 84, "clock": 85, "vase": 86, "scissors": 87, "toothbrush": 90,
}  # fmt: skip  (COCO ids of the 65 split classes)


@dataclass(frozen=True)
class Category:
    """A COCO category."""

    id: int
    name: str
    supercategory: str


@dataclass(frozen=True)
class Box:
    """One annotated instance: category id, pixel box (x, y, w, h) and the crowd flag."""

    category_id: int
    bbox: tuple[float, float, float, float]
    iscrowd: bool


@dataclass(frozen=True)
class DetectionImage:
    """An image with its instances, in annotation order."""

    image_id: int
    image: Path
    width: int
    height: int
    boxes: tuple[Box, ...]


@dataclass(frozen=True)
class CocoInstances:
    """Categories (file order) and images (file order) of an instances file."""

    categories: tuple[Category, ...]
    images: tuple[DetectionImage, ...]


def default_image_root(json_path: Path) -> Path:
    """`<json folder>/../val2017`, the COCO download layout."""
    return Path(json_path).parent.parent / "val2017"


def _box(entry, image: dict, where: Where) -> tuple[float, float, float, float]:
    """A checked [x, y, w, h] box inside its image (1 px of slack for rounding)."""
    bbox = field(entry, "bbox", list, where)
    if len(bbox) != 4:
        raise where.error(f"bbox should be [x, y, w, h], got {len(bbox)} values")
    x, y, w, h = (check_kind(v, float, f"bbox[{i}]", where) for i, v in enumerate(bbox))
    if x < 0 or y < 0 or w < 0 or h < 0 or x + w > image["width"] + 1 or y + h > image["height"] + 1:
        raise where.error(f"bbox {bbox} is not inside the {image['width']}x{image['height']} image")
    return x, y, w, h


def read_coco_instances(path: Path, image_root: Path | None = None, check_images: bool = True) -> CocoInstances:
    """Parse and validate an instances file; annotations must reference known images and categories."""
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    data = load_json(path)
    top = Where(path)
    categories: dict[int, Category] = {}
    for index, entry in enumerate(field(data, "categories", list, top)):
        where = top.at(f"categories[{index}]")
        category = Category(
            field(entry, "id", int, where), field(entry, "name", str, where), field(entry, "supercategory", str, where)
        )
        if category.id in categories:
            raise where.error(f"duplicate category id {category.id}")
        categories[category.id] = category
    images: dict[int, dict] = {}
    for index, entry in enumerate(field(data, "images", list, top)):
        where = top.at(f"images[{index}]")
        image_id = field(entry, "id", int, where)
        if image_id in images:
            raise where.error(f"duplicate image id {image_id}")
        images[image_id] = {
            "where": where,
            "file_name": field(entry, "file_name", str, where),
            "width": field(entry, "width", int, where),
            "height": field(entry, "height", int, where),
            "boxes": [],
        }
    for index, entry in enumerate(field(data, "annotations", list, top)):
        where = top.at(f"annotations[{index}]")
        image_id = field(entry, "image_id", int, where)
        category_id = field(entry, "category_id", int, where)
        if image_id not in images:
            raise where.error(f"image_id {image_id} is not among the images")
        if category_id not in categories:
            raise where.error(f"category_id {category_id} is not among the categories")
        iscrowd = field(entry, "iscrowd", int, where)
        if iscrowd not in (0, 1):
            raise where.error(f"iscrowd should be 0 or 1, got {iscrowd}")
        images[image_id]["boxes"].append(Box(category_id, _box(entry, images[image_id], where), bool(iscrowd)))
    return CocoInstances(
        tuple(categories.values()),
        tuple(
            DetectionImage(
                image_id,
                resolve_image(root, info["file_name"], info["where"], check_images),
                info["width"],
                info["height"],
                tuple(info["boxes"]),
            )
            for image_id, info in images.items()
        ),
    )


def zero_shot_split(instances: CocoInstances, path: Path) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(base ids, novel ids) of the Bansal et al. split, looked up by name in the file's categories."""
    by_name = {category.name: category.id for category in instances.categories}
    missing = [name for name in BANSAL_BASE_CATEGORIES + BANSAL_NOVEL_CATEGORIES if name not in by_name]
    if missing:
        raise Where(Path(path)).error(f"categories lack the zero-shot split classes {missing}")
    return tuple(by_name[n] for n in BANSAL_BASE_CATEGORIES), tuple(by_name[n] for n in BANSAL_NOVEL_CATEGORIES)


def write_coco_instances(path: Path, instances: CocoInstances, image_root: Path | None = None) -> None:
    """Write `instances` (images under `image_root`, default as for reading) as a COCO instances JSON.

    Each annotation gets `area` = w*h and the box polygon as its `segmentation`; ids count from 1.
    """
    path = Path(path)
    root = default_image_root(path) if image_root is None else Path(image_root)
    images, annotations = [], []
    for item in instances.images:
        file_name = Path(item.image).relative_to(root).as_posix()
        images.append({"id": item.image_id, "file_name": file_name, "width": item.width, "height": item.height})
        for box in item.boxes:
            x, y, w, h = box.bbox
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": item.image_id,
                    "category_id": box.category_id,
                    "bbox": [x, y, w, h],
                    "area": w * h,
                    "iscrowd": int(box.iscrowd),
                    "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]],
                }
            )
    categories = [{"id": c.id, "name": c.name, "supercategory": c.supercategory} for c in instances.categories]
    header = {"info": {"description": "hypvl"}, "licenses": []}
    write_json(path, {**header, "images": images, "annotations": annotations, "categories": categories})
