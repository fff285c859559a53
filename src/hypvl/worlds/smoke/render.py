"""Draw smoke-world pictures: a scene background, an optional country band and 1-3 objects."""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from scipy.ndimage import uniform_filter1d

from .world import COLOURS, COUNTRIES, SCENES, SIZES, Concept


@dataclass
class Placed:
    """One object in a picture: its concept, size word, texture and pixel box (x1, y1, x2, y2)."""

    concept: Concept
    size: str
    texture: str
    box: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass
class Picture:
    """What a picture shows, before and after drawing."""

    scene: str
    objects: list[Placed]
    country: str | None = None
    image: Image.Image | None = field(default=None, repr=False)


def _background(scene: str, size: int, rng: np.random.Generator) -> np.ndarray:
    top, bottom = (np.array(c, dtype=np.float32) for c in SCENES[scene])
    ramp = np.linspace(0.0, 1.0, size, dtype=np.float32)[:, None, None]
    canvas = (1 - ramp) * top + ramp * bottom
    canvas = np.broadcast_to(canvas, (size, size, 3)).copy()
    canvas += rng.normal(0.0, 8.0, canvas.shape).astype(np.float32)
    return canvas


def _shape_mask(shape: str, box: tuple[int, int, int, int], size: int) -> np.ndarray:
    x1, y1, x2, y2 = box
    mask_img = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(mask_img)
    cx, cy, w, h = (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1
    if shape == "circle":
        draw.ellipse(box, fill=255)
    elif shape == "square":
        draw.rectangle(box, fill=255)
    elif shape == "triangle":
        draw.polygon([(cx, y1), (x2, y2), (x1, y2)], fill=255)
    elif shape == "wide":
        draw.rectangle((x1, cy - h / 4, x2, cy + h / 4), fill=255)
    elif shape == "cross":
        draw.rectangle((x1, cy - h / 8, x2, cy + h / 8), fill=255)
        draw.rectangle((cx - w / 8, y1, cx + w / 8, y2), fill=255)
    elif shape == "ring":
        draw.ellipse(box, fill=255)
        draw.ellipse((x1 + w / 4, y1 + h / 4, x2 - w / 4, y2 - h / 4), fill=0)
    elif shape == "diamond":
        draw.polygon([(cx, y1), (x2, cy), (cx, y2), (x1, cy)], fill=255)
    else:
        raise ValueError(f"unknown shape {shape!r}")
    return np.asarray(mask_img) > 0


def object_mask(obj: Placed, size: int) -> np.ndarray:
    """The (size, size) boolean mask of the pixels `obj`'s shape covers."""
    return _shape_mask(obj.concept.shape, obj.box, size)


def _texture_mask(texture: str, size: int) -> np.ndarray:
    """Where a texture darkens the object's colour."""
    yy, xx = np.mgrid[0:size, 0:size]
    period = max(size // 5, 2)
    if texture == "plain":
        return np.zeros((size, size), dtype=bool)
    if texture == "striped":
        return (xx // period) % 2 == 0
    if texture == "banded":
        return (yy // period) % 2 == 0
    if texture == "checkered":
        return ((xx // period) + (yy // period)) % 2 == 0
    if texture == "dotted":
        return ((xx % (2 * period)) < period // 1.5) & ((yy % (2 * period)) < period // 1.5)
    raise ValueError(f"unknown texture {texture!r}")


def place(objects: list[Placed], size: int, rng: np.random.Generator) -> None:
    """Give each object a box of its size class, avoiding heavy overlap where possible."""
    taken: list[tuple[int, int, int, int]] = []
    for obj in objects:
        lo, hi = SIZES[obj.size]
        for _ in range(20):
            side = int(round(size * rng.uniform(lo, hi)))
            x1 = int(rng.integers(0, size - side + 1))
            y1 = int(rng.integers(0, size - side + 1))
            box = (x1, y1, x1 + side, y1 + side)
            if all(_overlap(box, other) < 0.3 for other in taken):
                break
        taken.append(box)
        obj.box = box


def _overlap(a, b) -> float:
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return ix * iy / max(smaller, 1)


def draw(picture: Picture, size: int, rng: np.random.Generator) -> Image.Image:
    """Render `picture` at `size` x `size` pixels (objects must already be placed)."""
    canvas = _background(picture.scene, size, rng)
    if picture.country is not None:
        band = max(size // 5, 2)
        canvas[:band] = np.array(COUNTRIES[picture.country], dtype=np.float32)
    for obj in picture.objects:
        colour = np.array(COLOURS[obj.concept.colour], dtype=np.float32)
        shaded = colour * 0.2
        mask = object_mask(obj, size)
        dark = mask & _texture_mask(obj.texture, size)
        canvas[mask] = colour + rng.normal(0.0, 6.0, 3)
        canvas[dark] = shaded
    picture.image = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    return picture.image


def fade(image: Image.Image, mask: np.ndarray) -> Image.Image:
    """`image` with the pixels under `mask` blended halfway toward mid-grey."""
    pixels = np.asarray(image, dtype=np.float32).copy()
    pixels[mask] = (pixels[mask] + 128.0) / 2
    return Image.fromarray(np.rint(pixels).astype(np.uint8))


def smear(image: Image.Image, box: tuple[int, int, int, int], length: int) -> Image.Image:
    """`image` with a horizontal motion smear: the rows of `box`, widened by `length` on either side,
    averaged over `length` pixels along x only."""
    x1, y1, x2, y2 = box
    pixels = np.asarray(image, dtype=np.float32).copy()
    region = np.s_[y1:y2 + 1, max(x1 - length, 0):x2 + length + 1]
    pixels[region] = uniform_filter1d(pixels[region], length, axis=1, mode="nearest")
    return Image.fromarray(np.rint(pixels).astype(np.uint8))


def scene_picture(rng: np.random.Generator, objects: list[Placed], size: int, country_p: float = 0.3) -> Picture:
    """A drawn picture of `objects` placed in a random scene, with a random country band `country_p` of the time."""
    country = str(rng.choice(sorted(COUNTRIES))) if rng.random() < country_p else None
    picture = Picture(scene=str(rng.choice(list(SCENES))), objects=objects, country=country)
    place(picture.objects, size, rng)
    draw(picture, size, rng)
    return picture


def save_image(image: Image.Image, path: Path) -> Path:
    """Save `image` as a quality-95 JPEG at `path` (folders made); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="JPEG", quality=95)
    return path
