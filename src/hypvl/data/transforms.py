"""Image views for training and evaluation, done in PIL (one resize call per image) and batched to tensors.

They follow torchvision's definitions, which MERU and HyCoCLIP use: RandomResizedCrop (area scale
and aspect-ratio sampling with ten attempts, then a centre-crop fallback), Resize of the shorter side
plus CenterCrop for classification, and a plain resize ("squeeze") for retrieval. Bicubic throughout.
"""

import math
import random

import numpy as np
import torch
from PIL import Image


def random_resized_crop_box(width: int, height: int, rng: random.Random, scale=(0.5, 1.0),
                            ratio=(3 / 4, 4 / 3)) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of a crop covering `scale` of the area at an aspect ratio in `ratio`."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            left = rng.randint(0, width - w)
            top = rng.randint(0, height - h)
            return left, top, left + w, top + h
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif in_ratio > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    left, top = (width - w) // 2, (height - h) // 2
    return left, top, left + w, top + h


def random_resized_crop(image: Image.Image, size: int, rng: random.Random, scale=(0.5, 1.0)) -> Image.Image:
    """A random crop of `scale` of the area, resized to `size` x `size` (training view)."""
    box = random_resized_crop_box(image.width, image.height, rng, scale)
    return image.resize((size, size), Image.BICUBIC, box=box)


def resize_center_crop(image: Image.Image, size: int) -> Image.Image:
    """Shorter side to `size`, then the central `size` x `size` (classification view)."""
    short = min(image.size)
    w, h = (size, int(size * image.height / short)) if image.width == short else (int(size * image.width / short), size)
    resized = image.resize((w, h), Image.BICUBIC)
    left, top = int(round((w - size) / 2)), int(round((h - size) / 2))
    return resized.crop((left, top, left + size, top + size))


def squeeze(image: Image.Image, size: int) -> Image.Image:
    """Resize to `size` x `size` ignoring the aspect ratio (retrieval view, as MERU does)."""
    return image.resize((size, size), Image.BICUBIC)


def to_tensor_batch(images: list[Image.Image]) -> torch.Tensor:
    """(B, 3, H, W) float32 in [0, 1] from equally sized RGB images."""
    array = np.stack([np.asarray(img if img.mode == "RGB" else img.convert("RGB"), dtype=np.uint8) for img in images])
    return torch.from_numpy(array).permute(0, 3, 1, 2).float().div_(255.0)
