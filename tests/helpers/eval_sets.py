"""Small evaluation sets written in each task's on-disk layout, shared by the evaluation tests."""

import torch

from helpers.evaluation import random_image
from hypvl.data.formats.breeds import (
    BreedsClass,
    BreedsHierarchy,
    BreedsSuperclass,
    write_breeds_hierarchy,
    write_breeds_split,
)
from hypvl.data.formats.coco_captions import write_coco_captions
from hypvl.data.formats.coco_instances import (
    BANSAL_BASE_CATEGORIES,
    BANSAL_NOVEL_CATEGORIES,
    Box,
    Category,
    COCO_CATEGORY_IDS,
    CocoInstances,
    DetectionImage,
    write_coco_instances,
)
from hypvl.data.formats.common import CaptionedImage
from hypvl.data.formats.hierarcaps import HierarCapsItem, write_hierarcaps_test
from hypvl.data.formats.imagefolder import write_imagefolder
from hypvl.data.formats.vg_attribution import AttributionItem, write_vg_attribution
from hypvl.data.formats.wordnet_isa import IsaEdge


NAMES = BANSAL_BASE_CATEGORIES + BANSAL_NOVEL_CATEGORIES


def _instances(tmp_path):
    g = torch.Generator().manual_seed(5)
    (tmp_path / "coco" / "val2017").mkdir(parents=True)
    categories = tuple(Category(COCO_CATEGORY_IDS[n], n, "thing") for n in sorted(NAMES, key=COCO_CATEGORY_IDS.get))
    picks = ["dog", "cat", "person", "cake", "bus", "car", "dog", "sink", "knife", "cat", "bowl", "cake"]
    images = []
    for i in range(4):
        path = tmp_path / "coco" / "val2017" / f"{i:012d}.jpg"
        boxes = tuple(Box(COCO_CATEGORY_IDS[picks[3 * i + j]], (2.0 + 9 * j, 1.5 + 6 * j, 12.0 + j, 10.5), False)
                      for j in range(3))
        picture = random_image(g, 40, 32)
        for j, box in enumerate(boxes):  # a distinct colour per box, so that crops embed apart
            x, y, w, h = (int(v) for v in box.bbox)
            picture.paste(tuple(int(c) for c in torch.randint(0, 256, (3,), generator=g)), (x, y, x + w, y + h))
        picture.save(path)
        images.append(DetectionImage(i + 1, path, 40, 32, boxes + (Box(COCO_CATEGORY_IDS["dog"], (0, 0, 5, 5), True),)))
    path = tmp_path / "coco" / "annotations" / "instances_val2017.json"
    write_coco_instances(path, CocoInstances(categories, tuple(images)))
    return path, images


CHAINS = [("animal", "dog", "a dog on grass", "a brown dog running on the grass"),
          ("animal", "cat", "a cat on a sofa", "a grey cat sleeping on a red sofa"),
          ("vehicle", "bus", "a bus in a street", "a yellow bus waiting in a busy street"),
          ("vehicle", "car", "a car on a road", "a small car parked by the road at night"),
          ("plant", "tree", "a tree in a field", "a tall tree alone in a green field")]


# more COCO captions of images 0 and 2, as rows of their own (the test CSV may repeat an image)
SHARING = [(0, ("animal", "puppy", "a puppy in a park", "a small puppy playing in a sunny park")),
           (2, ("vehicle", "bus", "a bus at a stop", "a red bus stopped at a crowded stop"))]


def _write(tmp_path, shared: bool = False):
    g = torch.Generator().manual_seed(4)
    images = tmp_path / "hc" / "assets" / "test_imgs"
    images.mkdir(parents=True)
    items = []
    for i, chain in enumerate(CHAINS):
        name = f"COCO_val2014_{i:012d}.jpg"
        random_image(g, 22, 18 + i).save(images / name)
        items.append(HierarCapsItem(i, chain, f"http://images.cocodataset.org/val2014/{name}", images / name))
    for image, chain in SHARING if shared else ():
        items.insert(image + 1, HierarCapsItem(len(items), chain, items[image].image_url, items[image].image))
    write_hierarcaps_test(tmp_path / "hc" / "data" / "hierarcaps_test.csv", items)
    return items


LEAVES = ["beagle", "tabby", "sedan", "bus", "tulip", "rose"]
SUPER = {"animal": [0, 1], "vehicle": [2, 3], "plant": [4, 5]}


def _breeds(tmp_path):
    g = torch.Generator().manual_seed(6)
    items = []
    for i in range(18):
        image = random_image(g)
        image.paste((40 * (i % 6), 250 - 40 * (i % 6), 30 * (i % 4)), (0, 0, 6 + i % 6 * 3, 12))
        items.append((i % 6, image))
    write_imagefolder(tmp_path / "classification" / "imagenet", "test", LEAVES, items)
    wnid = {n: f"n{i:08d}" for i, n in enumerate([*LEAVES, *SUPER])}
    classes = tuple(BreedsClass(i, wnid[n], n) for i, n in enumerate(LEAVES))
    edges = tuple(IsaEdge(wnid[s], wnid[LEAVES[c]]) for s, cs in SUPER.items() for c in cs)
    write_breeds_hierarchy(tmp_path / "breeds", BreedsHierarchy(classes, edges, {w: n for n, w in wnid.items()}))
    write_breeds_split(tmp_path / "breeds" / "all3.json", [BreedsSuperclass(i, wnid[s], s, (cs[0],), (cs[1],))
                                                          for i, (s, cs) in enumerate(SUPER.items())])
    write_breeds_split(tmp_path / "breeds" / "two.json", [BreedsSuperclass(i, wnid[s], s, tuple(SUPER[s]), ())
                                                         for i, s in enumerate(["animal", "vehicle"])])


ROOTS = {"train": "linear_probe", "val": "linear_probe", "test": "classification"}  # folders under the data dir


def _folder(tmp_path):
    g = torch.Generator().manual_seed(8)
    for split, count in (("train", 12), ("val", 6), ("test", 9)):
        items = []
        for i in range(count):
            image = random_image(g)
            image.paste(((90 * (i % 3)) % 256, 60, 255 - 90 * (i % 3)), (2, 2, 18, 16))  # learnable per class
            items.append((i % 3, image))
        write_imagefolder(tmp_path / ROOTS[split] / "cifar10", split, ["a", "b", "c"], items)


WORDS = ["dog", "cat", "red car", "tree", "boat", "sky", "two birds", "a lamp", "bread", "snow", "a hat", "rain"]


def _items(root, count=13):
    g = torch.Generator().manual_seed(3)
    items = []
    for i in range(count):
        path = root / f"{i:03d}.jpg"
        random_image(g, 20 + i % 5, 16 + i % 3).save(path)
        captions = tuple(f"{WORDS[(i + j) % len(WORDS)]} number {i} {j}" for j in range(1 + i % 3))
        items.append(CaptionedImage(path, captions))
    return items


NOUNS = ["dog", "cat", "car", "tree", "boat", "lamp", "hat", "cup"]


def _attribution(tmp_path, g):
    root = tmp_path / "aro" / "images"
    root.mkdir(parents=True)
    items = []
    for i in range(14):
        path = root / f"{i % 5}.jpg"
        if not path.exists():
            random_image(g, 30, 26).save(path)
        pair = [("red", "wooden"), ("small", "white"), ("old", "blue")][i % 3]
        box = (float(i % 4), 2.5, 11.0 + i % 6, 9.0 + i % 5)
        items.append(AttributionItem(path, box, f"the {pair[0]} {NOUNS[i % 8]} and the {pair[1]} cup",
                                     f"the {pair[1]} {NOUNS[i % 8]} and the {pair[0]} cup", pair))
    write_vg_attribution(tmp_path / "aro" / "visual_genome_attribution.json", items)
    return items


DATASETS = {"coco_captions": "coco/annotations/captions_val2017.json",
            "coco_instances": "coco/annotations/instances_val2017.json"}


def _coco(tmp_path):
    g = torch.Generator().manual_seed(9)
    root = tmp_path / "coco" / "val2017"
    root.mkdir(parents=True)
    items, images = [], []
    for i in range(5):
        path = root / f"{i:012d}.jpg"
        random_image(g, 30, 24).save(path)
        items.append(CaptionedImage(path, tuple(f"photo {i} caption {j}" for j in range(2))))
        images.append(DetectionImage(i + 1, path, 30, 24, (Box(1, (1.0, 2.0, 10.0 + i, 8.0), False),
                                                           Box(1, (0.0, 0.0, 4.0, 4.0), True))))
    write_coco_captions(tmp_path / DATASETS["coco_captions"], items)
    write_coco_instances(tmp_path / DATASETS["coco_instances"], CocoInstances((Category(1, "person", "person"),),
                                                                              tuple(images)))
    return items, images
