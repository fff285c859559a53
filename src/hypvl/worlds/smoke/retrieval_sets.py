"""The smoke world's retrieval and detection sets: COCO val2017 (captions, and instances with the 48/17 zero-shot
split; `world.COCO_CATEGORY_OF` says which concepts play which COCO categories) and Flickr30K (Karpathy split)."""

from pathlib import Path

from hypvl.data.formats.coco_captions import write_coco_captions
from hypvl.data.formats.coco_instances import (
    BANSAL_BASE_CATEGORIES,
    BANSAL_NOVEL_CATEGORIES,
    COCO_CATEGORY_IDS,
    Box,
    Category,
    CocoInstances,
    DetectionImage,
    write_coco_instances,
)
from hypvl.data.formats.common import CaptionedImage
from hypvl.data.formats.flickr30k import write_flickr30k

from . import captions
from .corpora import corpus_picture
from .render import save_image
from .settings import WorldSettings, rng_for
from .world import coco_category

COCO_SUPERCATEGORIES = {
    "person": ("person",), "vehicle": ("bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat"),
    "outdoor": ("bench",), "animal": ("bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra",
                                      "giraffe"),
    "accessory": ("backpack", "umbrella", "handbag", "tie", "suitcase"),
    "sports": ("frisbee", "skis", "snowboard", "kite", "skateboard", "surfboard"),
    "kitchen": ("bottle", "cup", "fork", "knife", "spoon", "bowl"),
    "food": ("banana", "apple", "sandwich", "orange", "broccoli", "carrot", "pizza", "donut", "cake"),
    "furniture": ("chair", "couch", "bed", "toilet"), "electronic": ("tv", "laptop", "mouse", "remote", "keyboard"),
    "appliance": ("microwave", "oven", "toaster", "sink", "refrigerator"),
    "indoor": ("book", "clock", "vase", "scissors", "toothbrush"),
}  # fmt: skip  (COCO 2017 supercategories of the 65 split classes)


def _retrieval_item(settings: WorldSettings, stream: str, index: int, path: Path):
    """A 1-3 object picture saved at `path`, with five captions; returns (CaptionedImage, Picture)."""
    rng = rng_for(settings.seed, stream, index)
    pic = corpus_picture(rng, "grit", settings.image_size)
    texts = tuple(captions.caption(pic, rng)[0] for _ in range(5))
    return CaptionedImage(save_image(pic.image, path), texts), pic


def coco_categories() -> tuple[Category, ...]:
    """The 65 categories of the zero-shot split with their COCO ids and supercategories, by id."""
    supercategory = {name: sup for sup, names in COCO_SUPERCATEGORIES.items() for name in names}
    names = sorted(BANSAL_BASE_CATEGORIES + BANSAL_NOVEL_CATEGORIES, key=COCO_CATEGORY_IDS.get)
    return tuple(Category(COCO_CATEGORY_IDS[n], n, supercategory[n]) for n in names)


def write_coco(settings: WorldSettings, captions_json: Path, instances_json: Path) -> dict:
    """COCO val2017-like images (`<json>/../val2017/<id:012d>.jpg`) with five captions each and
    instance boxes for the objects whose concept plays a COCO category."""
    root = Path(captions_json).parent.parent / "val2017"
    items, detections = [], []
    for image_id in range(1, settings.retrieval_images + 1):
        item, pic = _retrieval_item(settings, "coco", image_id, root / f"{image_id:012d}.jpg")
        items.append(item)
        boxes = tuple(Box(COCO_CATEGORY_IDS[coco_category(obj.concept)],
                          (float(obj.box[0]), float(obj.box[1]), float(obj.box[2] - obj.box[0]),
                           float(obj.box[3] - obj.box[1])), False)
                      for obj in pic.objects if coco_category(obj.concept) is not None)
        detections.append(DetectionImage(image_id, item.image, settings.image_size, settings.image_size, boxes))
    write_coco_captions(captions_json, items, root)
    write_coco_instances(instances_json, CocoInstances(coco_categories(), tuple(detections)), root)
    novel = {COCO_CATEGORY_IDS[n] for n in BANSAL_NOVEL_CATEGORIES}
    instances = [b for d in detections for b in d.boxes]
    return {"images": len(items), "captions": 5 * len(items), "instances": len(instances),
            "novel_instances": sum(b.category_id in novel for b in instances)}


def write_flickr(settings: WorldSettings, path: Path, extra_per_split: int = 10) -> dict:
    """Flickr30K Karpathy-like json: `retrieval_images` test images, a few train and val ones."""
    root = Path(path).parent / "flickr30k_images"
    sizes = {"train": extra_per_split, "val": extra_per_split, "test": settings.retrieval_images}
    splits = {split: [_retrieval_item(settings, f"flickr30k/{split}", i, root / f"{split}{i:05d}.jpg")[0]
                      for i in range(n)] for split, n in sizes.items()}
    write_flickr30k(path, splits, root)
    return sizes
