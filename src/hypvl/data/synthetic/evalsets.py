"""The smoke world's evaluation sets, each in its real on-disk format at its `eval.datasets` path.

Retrieval (COCO captions val2017, Flickr30K Karpathy), detection (COCO instances with the 48/17
split; `world.COCO_CATEGORY_OF` says which concepts play which COCO categories), VL-CheckList
(Object size and location groups, Attribute color/size/material/state/action, Relation
spatial/action), ARO VG-Attribution, HierarCaps (test chains and train positives/negatives), the
WordNet-like is-a file, HyperLex-like graded pairs and a BREEDS-like hierarchy with superclass splits.

VL-CheckList's object size and location groups (HyCoCLIP App. E.1) use the paper's rules with its
pixel thresholds scaled from a 224-pixel view to the smoke picture (x image_size/224): at 64 px
"small" is a box area below 9.1^2 (the world's tiny objects), "large" above 27.4^2.

Its Attribute state and action and Relation action groups are visual stand-ins, a seeded coin
picking which of two each item shows: an object "bright" (drawn as usual) or "faded" (blended halfway
to grey), "resting" or "moving" (smeared along x), and "a X carrying a Y" (Y drawn overlapping the
top of X) or "a X ignoring a Y" (the two far apart).
"""

import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from hypvl.data.formats.breeds import (
    BreedsClass,
    BreedsHierarchy,
    BreedsSuperclass,
    write_breeds_hierarchy,
    write_breeds_split,
)
from hypvl.data.formats.cc3m import CC3MSample, write_cc3m
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
from hypvl.data.formats.hierarcaps import (
    HierarCapsItem,
    HierarCapsPair,
    write_hierarcaps_test,
    write_hierarcaps_train,
)
from hypvl.data.formats.hyperlex import HyperLexPair, write_hyperlex
from hypvl.data.formats.images import encode_image
from hypvl.data.formats.vg_attribution import AttributionItem, write_vg_attribution
from hypvl.data.formats.vlchecklist import (
    CheckListItem,
    write_corpus,
    write_vlchecklist,
)
from hypvl.data.formats.wordnet_isa import IsaEdge, write_wordnet_isa
from hypvl.io import atomic_write

from . import captions, render
from .corpora import corpus_picture, random_object
from .settings import WorldSettings, rng_for
from .world import (
    COLOURS,
    COUNTRIES,
    SCENES,
    SIZES,
    TAXONOMY,
    TEXTURES,
    coco_category,
    hierarchy_nodes,
    isa_edges,
    leaf_concepts,
    wnid,
)

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
VLC_SIZE_GROUPS = ("small", "medium", "large")
VLC_LOCATION_GROUPS = ("center", "mid", "margin")
VLC_ATTRIBUTES = ("color", "size", "material", "state", "action")  # material: the world's textures
VLC_LOOKS = {"state": ("bright", "faded"), "action": ("resting", "moving")}  # the first: drawn as usual
VLC_RELATIONS = ("spatial", "action")
OPPOSITE = {"to the left of": "to the right of", "to the right of": "to the left of",
            "above": "below", "below": "above", "carrying": "ignoring", "ignoring": "carrying"}


def save_image(image: Image.Image, path: Path) -> Path:
    """Save `image` as a quality-95 JPEG at `path` (folders made); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="JPEG", quality=95)
    return path


def _picture(rng, objects: list[render.Placed], size: int, country_p: float = 0.3) -> render.Picture:
    country = str(rng.choice(sorted(COUNTRIES))) if rng.random() < country_p else None
    pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=objects, country=country)
    render.place(pic.objects, size, rng)
    render.draw(pic, size, rng)
    return pic


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


def _leaf_phrase(obj: render.Placed, level: int) -> str:
    return (obj.concept.name, obj.concept.basic, obj.concept.superordinate)[level]


def _other_noun(rng, obj: render.Placed, level: int) -> str:
    """A noun at `level` for a concept of another basic-level category (another superordinate at 2)."""
    others = [c for c in leaf_concepts() if c.basic != obj.concept.basic
              and (level < 2 or c.superordinate != obj.concept.superordinate)]
    other = others[rng.integers(len(others))]
    return (other.name, other.basic, other.superordinate)[level]


def _vlc_size_group(box, size: int) -> str:
    """VL-CheckList's object size group, thresholds 32 and 96 px scaled by size/224."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    small, large = (32 * size / 224) ** 2, (96 * size / 224) ** 2
    return "small" if area < small else ("large" if area > large else "medium")


def _vlc_location_group(box, size: int) -> str:
    """VL-CheckList's location group: y/x with y the centre offset, x the half diagonal."""
    y = np.hypot((box[0] + box[2]) / 2 - size / 2, (box[1] + box[3]) / 2 - size / 2)
    ratio = y / (np.sqrt(2) * size / 2)
    return "center" if ratio <= 1 / 3 else ("mid" if ratio <= 2 / 3 else "margin")


def _location_box(rng, group: str, size: int) -> tuple[int, int, int, int]:
    """A small square box (side 0.28 x size) whose centre lies in location `group`: centre drawn at a
    ratio y/x inside the group's range in a random direction, redrawn until the box fits."""
    side = int(round(SIZES["small"][0] * size))
    low, high = {"center": (0.0, 1 / 3), "mid": (1 / 3 + 1e-6, 2 / 3), "margin": (2 / 3 + 1e-6, 1.0)}[group]
    half_diagonal = np.sqrt(2) * size / 2
    for _ in range(1000):
        ratio, angle = rng.uniform(low, high), rng.uniform(0, 2 * np.pi)
        cx = size / 2 + ratio * half_diagonal * np.cos(angle)
        cy = size / 2 + ratio * half_diagonal * np.sin(angle)
        x1, y1 = int(round(cx - side / 2)), int(round(cy - side / 2))
        box = (x1, y1, x1 + side, y1 + side)
        if min(box) >= 0 and max(box) <= size and _vlc_location_group(box, size) == group:
            return box
    raise RuntimeError(f"no {side}-px box fits VL-CheckList location group {group!r} at {size} px")


def _object_item(settings: WorldSettings, kind: str, group: str, index: int) -> tuple[render.Picture, str, str]:
    """(picture, POS, NEG) of an Object item whose object falls in `group` of `kind` (size: tiny, small
    or large objects, with a second small object half the time; location: one small object placed
    in the group's ring); NEG names the object as a concept of another category."""
    rng = rng_for(settings.seed, f"vlc/{kind}/{group}", index)
    size, leaves = settings.image_size, leaf_concepts()
    if kind == "size":
        target = random_object(rng, leaves, size={"small": "tiny", "medium": "small", "large": "large"}[group])
        objects = [target] + ([random_object(rng, leaves, size="small")] if rng.random() < 0.5 else [])
        pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=objects)
        render.place(pic.objects, size, rng)
        assert _vlc_size_group(target.box, size) == group
    else:
        target = random_object(rng, leaves, size="small")
        target.box = _location_box(rng, group, size)
        pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=[target])
    render.draw(pic, size, rng)
    level = int(rng.choice(3, p=captions.LEVEL_P))
    tail = captions.scene_tail(pic)
    pos = captions.with_article([target.texture, _leaf_phrase(target, level)]) + tail
    neg = captions.with_article([target.texture, _other_noun(rng, target, level)]) + tail
    return pic, pos, neg


def _show(image: Image.Image, obj: render.Placed, look: str, size: int) -> Image.Image:
    """`image` with its object faded or smeared (over size/8 pixels) as `look` says, else as is."""
    if look == "faded":
        return render.fade(image, render.object_mask(obj, size))
    if look == "moving":
        return render.smear(image, obj.box, size // 8)
    return image


def _attribute_item(settings: WorldSettings, attribute: str, index: int) -> tuple[render.Picture, str, str]:
    """(picture, POS, NEG) of a one-object picture; NEG gives the object a wrong colour, size or
    pattern, or the other state or action (`VLC_LOOKS`: a seeded coin picks one, the pixels show it)."""
    rng = rng_for(settings.seed, f"vlc/attribute/{attribute}", index)
    obj = random_object(rng, leaf_concepts())
    pic = _picture(rng, [obj], settings.image_size, country_p=0.0)
    noun = _leaf_phrase(obj, int(rng.choice(2)))
    if attribute in VLC_LOOKS:
        true_word = VLC_LOOKS[attribute][int(rng.random() < 0.5)]
        pic.image = _show(pic.image, obj, true_word, settings.image_size)
    else:
        true_word = {"color": obj.concept.colour, "size": obj.size, "material": obj.texture}[attribute]
    choices = {"color": sorted(COLOURS), "size": ["small", "large"], "material": TEXTURES, **VLC_LOOKS}[attribute]
    wrong = [w for w in choices if w != true_word]
    tail = captions.scene_tail(pic)
    return (pic, captions.with_article([true_word, noun]) + tail,
            captions.with_article([wrong[rng.integers(len(wrong))], noun]) + tail)


Corner = tuple[int, int]


def _spatial_layout(rng, side: int, size: int) -> tuple[Corner, Corner, str]:
    """Top-left corners of two boxes near opposite edges, side by side or stacked, and the first's
    relation to the second."""
    horizontal = rng.random() < 0.5
    lo, hi = int(rng.integers(0, size // 8)), int(rng.integers(size - side - size // 8, size - side + 1))
    across = int(rng.integers(0, size - side + 1))
    a, b = (lo, hi) if rng.random() < 0.5 else (hi, lo)
    corner = (lambda p: (p, across)) if horizontal else (lambda p: (across, p))
    relation = ("to the left of" if a < b else "to the right of") if horizontal else ("above" if a < b else "below")
    return corner(a), corner(b), relation


def _action_layout(rng, side: int, size: int) -> tuple[Corner, Corner, str]:
    """Corners for "carrying" (the first in the lower half, the second overlapping its top third) or
    "ignoring" (far apart, as `_spatial_layout`), a coin each, and that word."""
    if rng.random() < 0.5:
        return *_spatial_layout(rng, side, size)[:2], "ignoring"
    x, y = int(rng.integers(0, size - side + 1)), int(rng.integers(size // 2, size - side + 1))
    carried_x = int(np.clip(x + rng.integers(-(side // 4), side // 4 + 1), 0, size - side))
    return (x, y), (carried_x, y - 2 * side // 3), "carrying"


RELATION_LAYOUTS = {"spatial": _spatial_layout, "action": _action_layout}


def _relation_item(settings: WorldSettings, relation: str, index: int) -> tuple[render.Picture, str, str]:
    """(picture, POS, NEG) of two objects of different basic categories placed by `relation`'s
    layout; NEG states the opposite relation."""
    rng = rng_for(settings.seed, f"vlc/relation/{relation}", index)
    size, leaves = settings.image_size, leaf_concepts()
    first = random_object(rng, leaves, size="small")
    second = random_object(rng, [c for c in leaves if c.basic != first.concept.basic], size="small")
    pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=[first, second])
    side = int(round(size * 0.34))
    *corners, word = RELATION_LAYOUTS[relation](rng, side, size)
    for obj, (x, y) in zip((first, second), corners):
        obj.box = (x, y, x + side, y + side)
    render.draw(pic, size, rng)
    subject, obj_noun = (captions.with_article([obj.concept.name]) for obj in (first, second))
    return pic, f"{subject} {word} {obj_noun}", f"{subject} {OPPOSITE[word]} {obj_noun}"


def write_vlchecklist_sets(settings: WorldSettings, root: Path) -> dict:
    """VL-CheckList root: corpus/v1/<Type>/<group>/vg*.yaml, data/<Type>/... annotation files,
    images under vg/VG_100K/. Returns items per corpus YAML (relative path)."""
    root = Path(root)
    corpora: list[tuple[str, str, Callable[[int], tuple]]] = []
    for group in VLC_SIZE_GROUPS:
        corpora.append((f"Object/Size/{group}/vg_obj.yaml", f"Object/Size/vg_size/vg_obj_{group}.json",
                        lambda i, g=group: _object_item(settings, "size", g, i)))
    for group in VLC_LOCATION_GROUPS:
        corpora.append((f"Object/Location/{group}/vg_obj.yaml", f"Object/Location/vg_location/vg_obj_{group}.json",
                        lambda i, g=group: _object_item(settings, "location", g, i)))
    for attribute in VLC_ATTRIBUTES:
        corpora.append((f"Attribute/{attribute}/vg.yaml", f"Attribute/vg/{attribute}.json",
                        lambda i, a=attribute: _attribute_item(settings, a, i)))
    for relation in VLC_RELATIONS:
        corpora.append((f"Relation/{relation}/vg.yaml", f"Relation/vg/{relation}.json",
                        lambda i, r=relation: _relation_item(settings, r, i)))
    image_root, counts, number = root / "vg", {}, 1
    for yaml_name, annotation, draw in corpora:
        items = []
        for i in range(settings.vlchecklist_per_group):
            pic, pos, neg = draw(i)
            path = save_image(pic.image, image_root / "VG_100K" / f"{number}.jpg")
            number += 1
            items.append(CheckListItem(path, (pos,), (neg,)))
        write_vlchecklist(root / "data" / annotation, items, image_root)
        write_corpus(root / "corpus" / "v1" / yaml_name, root / "data" / annotation, image_root, root)
        counts[f"corpus/v1/{yaml_name}"] = len(items)
    return counts


def write_vg_attribution_set(settings: WorldSettings, path: Path) -> dict:
    """ARO VG-Attribution-like records: two objects of different basic categories with two patterns;
    the crop box spans both; the false caption swaps the patterns. Each unordered pattern pair
    has `vg_attribution_per_pair` records, attributes listed in a fixed order."""
    root = Path(path).parent / "images"
    size, leaves, items = settings.image_size, leaf_concepts(), []
    pairs = list(itertools.combinations(TEXTURES, 2))
    for index in range(len(pairs) * settings.vg_attribution_per_pair):
        rng = rng_for(settings.seed, "vg_attribution", index)
        first_attr, second_attr = pairs[index % len(pairs)]
        first = random_object(rng, leaves, size="small", texture=first_attr)
        second = random_object(rng, [c for c in leaves if c.basic != first.concept.basic], size="small",
                               texture=second_attr)
        pic = _picture(rng, [first, second], size)
        boxes = np.array([first.box, second.box])
        x1, y1 = np.maximum(boxes[:, :2].min(0) - 2, 0)
        x2, y2 = np.minimum(boxes[:, 2:].max(0) + 2, size)
        image = save_image(pic.image, root / f"vga{index:05d}.jpg")
        nouns = (first.concept.basic, second.concept.basic)
        items.append(AttributionItem(
            image, (float(x1), float(y1), float(x2 - x1), float(y2 - y1)),
            f"the {first_attr} {nouns[0]} and the {second_attr} {nouns[1]}",
            f"the {second_attr} {nouns[0]} and the {first_attr} {nouns[1]}", (first_attr, second_attr)))
    write_vg_attribution(path, items, root)
    return {"items": len(items), "attribute_pairs": len(pairs)}


def _chain_negative(rng, obj: render.Placed, pic: render.Picture) -> tuple[str, str, str, str]:
    """HierarCaps negatives: tier i contradicts positive tier i and entails positive tier i-1."""
    leaf = obj.concept
    other_super = [s for s in TAXONOMY if s != leaf.superordinate]
    sibling_basics = [b for b in TAXONOMY[leaf.superordinate] if b != leaf.basic]
    sibling_leaves = [name for name, _ in TAXONOMY[leaf.superordinate][leaf.basic][1] if name != leaf.name]
    other_texture = [t for t in TEXTURES if t != obj.texture]
    other_scene = [s for s in SCENES if s != pic.scene]
    scene = captions.SCENE_PHRASES[other_scene[rng.integers(len(other_scene))]]
    return (captions.with_article([other_super[rng.integers(len(other_super))]]),
            captions.with_article([sibling_basics[rng.integers(len(sibling_basics))]]),
            captions.with_article([obj.size, sibling_leaves[rng.integers(len(sibling_leaves))]]),
            captions.with_article([obj.size, other_texture[rng.integers(len(other_texture))], leaf.name]) + " " + scene)


def write_hierarcaps_sets(settings: WorldSettings, test_csv: Path, train_csv: Path, train_images: Path) -> dict:
    """HierarCaps-like test rows (one-object pictures, images at the reader's default folder) and
    train positive/negative chains (concepts of superordinates with several basic categories), plus the train
    rows' pictures as one CC3M-format shard `train_images` whose captions are their tier-4 captions (upstream's
    train images are found by cross-referencing those captions in CC3M)."""
    image_root = Path(test_csv).parent.parent / "assets" / "test_imgs"
    leaves, items = leaf_concepts(), []
    for index in range(settings.hierarcaps_test):
        rng = rng_for(settings.seed, "hierarcaps/test", index)
        obj = random_object(rng, leaves)
        pic = _picture(rng, [obj], settings.image_size)
        name = f"COCO_val2014_{index + 1:012d}.jpg"
        items.append(HierarCapsItem(index, captions.caption_chain(obj, pic),
                                    f"http://images.cocodataset.org/val2014/{name}",
                                    save_image(pic.image, image_root / name)))
    write_hierarcaps_test(test_csv, items)
    contrastable = [c for c in leaves if len(TAXONOMY[c.superordinate]) > 1]
    pairs, samples = [], []
    for index in range(settings.hierarcaps_train):
        rng = rng_for(settings.seed, "hierarcaps/train", index)
        obj = random_object(rng, contrastable)
        pic = render.Picture(scene=str(rng.choice(list(SCENES))), objects=[obj])
        pairs.append(HierarCapsPair(captions.caption_chain(obj, pic), _chain_negative(rng, obj, pic)))
        render.place(pic.objects, settings.image_size, rng)  # drawn after the captions: they keep their stream
        render.draw(pic, settings.image_size, rng)
        samples.append(CC3MSample(f"{index:09d}", encode_image(pic.image), pairs[-1].positive[-1]))
    write_hierarcaps_train(train_csv, pairs)
    write_cc3m(train_images, samples)
    return {"test": len(items), "train": len(pairs)}


def write_wordnet(path: Path) -> dict:
    """The is-a edges as `<parent wnid> <child wnid>` lines, plus `words.txt` (`wnid<TAB>name`)."""
    edges = [IsaEdge(wnid(parent), wnid(child)) for child, parent in isa_edges()]
    write_wordnet_isa(path, edges)
    with atomic_write(Path(path).parent / "words.txt", mode="w", encoding="utf-8") as handle:
        handle.write("".join(f"{wnid(node)}\t{node}\n" for node in hierarchy_nodes()))
    return {"edges": len(edges), "nodes": len(hierarchy_nodes())}


# mean 0-6 rating of "to what degree is X a type of Y?" per relation
HYPERLEX_MEANS = {"hyp-1": 5.6, "hyp-2": 5.2, "hyp-3": 4.8, "r-hyp-1": 1.4, "cohyp": 0.9, "no-rel": 0.2}


def hyperlex_pairs() -> list[tuple[str, str, str]]:
    """(word1, word2, relation) pairs of the world hierarchy: hypernyms 1-3 levels up, reversed
    direct edges, co-hyponyms (siblings) and unrelated leaves of different superordinates."""
    parents = dict(isa_edges())
    pairs = []
    for child in parents:
        node, distance = child, 0
        while node in parents:
            node, distance = parents[node], distance + 1
            pairs.append((child, node, f"hyp-{distance}"))
    pairs += [(parent, child, "r-hyp-1") for child, parent in isa_edges()]
    siblings: dict[str, list[str]] = {}
    for child, parent in isa_edges():
        siblings.setdefault(parent, []).append(child)
    pairs += [(a, b, "cohyp") for group in siblings.values() for a, b in itertools.combinations(group, 2)]
    leaves = leaf_concepts()
    pairs += [(a.name, b.name, "no-rel") for a, b in zip(leaves, leaves[7:] + leaves[:7])
              if a.superordinate != b.superordinate]
    return pairs


def write_hyperlex_set(settings: WorldSettings, path: Path, raters: int = 10) -> dict:
    """HyperLex-like file: each pair rated 0-6 by `raters` simulated raters around its relation's mean."""
    rows = []
    for index, (word1, word2, relation) in enumerate(hyperlex_pairs()):
        rng = rng_for(settings.seed, "hyperlex", index)
        ratings = np.clip(np.rint(rng.normal(HYPERLEX_MEANS[relation], 0.8, raters)), 0, 6).astype(int)
        score = round(float(ratings.mean()), 2)
        rows.append(HyperLexPair(word1, word2, "N", relation, score, round(score * 10 / 6, 2),
                                 round(float(ratings.std()), 2), tuple(int(r) for r in ratings)))
    write_hyperlex(path, rows)
    return {"pairs": len(rows)}


def write_breeds_sets(folder: Path, imagenet_classes: tuple[str, ...]) -> dict:
    """BREEDS-like info dir (classes = the smoke ImageNet's leaves in class order, the world's is-a
    edges, node names) and two superclass splits: `basic7.json` (basic-level superclasses, first
    two leaves source, last two target) and `superordinate4.json` (leaves alternating source/target)."""
    folder = Path(folder)
    classes = tuple(BreedsClass(i, wnid(name), name) for i, name in enumerate(imagenet_classes))
    edges = tuple(IsaEdge(wnid(parent), wnid(child)) for child, parent in isa_edges())
    write_breeds_hierarchy(folder, BreedsHierarchy(classes, edges, {wnid(n): n for n in hierarchy_nodes()}))
    number = {name: i for i, name in enumerate(imagenet_classes)}
    leaves = leaf_concepts()
    splits = {
        "basic7.json": [(basic, [number[c.name] for c in leaves if c.basic == basic])
                        for sup in TAXONOMY for basic in TAXONOMY[sup]],
        "superordinate4.json": [(sup, [number[c.name] for c in leaves if c.superordinate == sup])
                                for sup in TAXONOMY],
    }
    for name, groups in splits.items():
        if name == "basic7.json":
            cut = [(members[:2], members[2:]) for _, members in groups]
        else:
            cut = [(members[::2], members[1::2]) for _, members in groups]
        write_breeds_split(folder / name, [BreedsSuperclass(label, wnid(node), node, tuple(src), tuple(tgt))
                                           for label, ((node, _), (src, tgt)) in enumerate(zip(groups, cut))])
    return {"classes": len(classes), "splits": sorted(splits)}
