"""The smoke world's VL-CheckList pictures show what their captions say: faded objects halfway to grey, moving ones
smeared along x, a carried object straddling its carrier's top edge."""

import numpy as np

from helpers.smoke_world import TINY
from hypvl.worlds.smoke import render, vlchecklist_sets


def _looks(group: str, count: int = 24) -> dict[str, list[render.Picture]]:
    """The first `count` pictures of an Attribute group, by the state or action their POS names."""
    pictures: dict[str, list[render.Picture]] = {}
    for index in range(count):
        picture, pos, _ = vlchecklist_sets._attribute_item(TINY, group, index)
        pictures.setdefault(pos.split()[1], []).append(picture)
    return pictures


def test_faded_objects_sit_halfway_to_grey_bright_ones_do_not():
    pictures = _looks("state")
    assert set(pictures) == {"bright", "faded"}
    for word, group in pictures.items():
        for picture in group:  # every palette colour, and a texture's dark pixels, lie over 64 from grey
            obj = picture.objects[0]
            pixels = np.asarray(picture.image, dtype=np.float32)[render.object_mask(obj, TINY.image_size)]
            assert (np.abs(pixels - 128).max() <= 64) == (word == "faded")


def _horizontal_energy(picture: render.Picture) -> float:
    """Mean squared difference of horizontal neighbours inside the object's box."""
    x1, y1, x2, y2 = picture.objects[0].box
    box = np.asarray(picture.image, dtype=np.float32)[y1:y2 + 1, x1:x2 + 1]
    return float((np.diff(box, axis=1) ** 2).mean())


def test_moving_objects_are_smeared_along_x():
    energy = {word: np.median([_horizontal_energy(p) for p in group]) for word, group in _looks("action").items()}
    assert set(energy) == {"moving", "resting"} and 4 * energy["moving"] < energy["resting"]


def test_carried_objects_overlap_the_carriers_top_ignored_ones_stand_apart():
    words = set()
    for index in range(16):
        picture, pos, _ = vlchecklist_sets._relation_item(TINY, "action", index)
        (ax1, ay1, ax2, ay2), (bx1, by1, bx2, by2) = (obj.box for obj in picture.objects)
        words.add(word := pos.split()[2])
        overlap = min(ax2, bx2) > max(ax1, bx1) and min(ay2, by2) > max(ay1, by1)
        assert overlap == (word == "carrying")
        if overlap:  # the carried object straddles the carrier's top edge
            assert by1 < ay1 < by2
    assert words == {"carrying", "ignoring"}
