"""The smoke world's VL-CheckList: Object size and location groups, Attribute color/size/material/state/action and
Relation spatial/action, in VL-CheckList's corpus and annotation layout with Visual Genome-like image paths.

The object size and location groups (HyCoCLIP App. E.1) use the paper's rules with its pixel thresholds scaled from
a 224-pixel view to the smoke picture (x image_size/224): at 64 px "small" is a box area below 9.1^2 (the world's
tiny objects), "large" above 27.4^2.

The Attribute state and action and Relation action groups are visual stand-ins, a seeded coin picking which of two
each item shows: an object "bright" (drawn as usual) or "faded" (blended halfway to grey), "resting" or "moving"
(smeared along x), and "a X carrying a Y" (Y drawn overlapping the top of X) or "a X ignoring a Y" (the two far
apart).
"""

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from hypvl.data.formats.vlchecklist import CheckListItem, write_corpus, write_vlchecklist

from . import captions, render
from .corpora import random_object
from .render import save_image, scene_picture
from .settings import WorldSettings, rng_for
from .world import COLOURS, SCENES, SIZES, TEXTURES, leaf_concepts

VLC_SIZE_GROUPS = ("small", "medium", "large")
VLC_LOCATION_GROUPS = ("center", "mid", "margin")
VLC_ATTRIBUTES = ("color", "size", "material", "state", "action")  # material: the world's textures
VLC_LOOKS = {"state": ("bright", "faded"), "action": ("resting", "moving")}  # the first: drawn as usual
VLC_RELATIONS = ("spatial", "action")
OPPOSITE = {"to the left of": "to the right of", "to the right of": "to the left of",
            "above": "below", "below": "above", "carrying": "ignoring", "ignoring": "carrying"}



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
    pic = scene_picture(rng, [obj], settings.image_size, country_p=0.0)
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

