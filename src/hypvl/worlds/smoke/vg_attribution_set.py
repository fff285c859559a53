"""The smoke world's ARO VG-Attribution: two objects of different basic categories, each with its own pattern, and
a false caption swapping the patterns."""

import itertools
from pathlib import Path

import numpy as np

from hypvl.data.formats.vg_attribution import AttributionItem, write_vg_attribution

from .corpora import random_object
from .render import save_image, scene_picture
from .settings import WorldSettings, rng_for
from .world import TEXTURES, leaf_concepts


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
        pic = scene_picture(rng, [first, second], size)
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
