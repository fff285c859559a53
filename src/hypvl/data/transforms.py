"""Image views for evaluation, done in PIL (one resize call per image), and PIL images batched to tensors.

They follow torchvision's definitions, which MERU and HyCoCLIP use: Resize of the shorter side plus CenterCrop
for classification, and a plain resize ("squeeze") for retrieval; `EVAL_VIEWS` names them for
`DualEncoder.eval_view` (a public model's own preprocessing aside). Bicubic throughout. (Training crops are
torchvision.transforms.v2's RandomResizedCrop, in hypvl.train.data.)
"""

import numpy as np
import torch
from PIL import Image


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


# an evaluation task's kind of view -> our models' view of that kind (`DualEncoder.eval_view`)
EVAL_VIEWS = {"crop": resize_center_crop, "squeeze": squeeze}


def to_tensor_batch(images: list[Image.Image]) -> torch.Tensor:
    """(B, 3, H, W) float32 in [0, 1] from equally sized RGB images."""
    return to_unit_float(to_uint8_batch(images))


def to_uint8_batch(images: list[Image.Image]) -> torch.Tensor:
    """(B, H, W, 3) uint8 pixels of equally sized images, as RGB (what a loader process sends on)."""
    return torch.from_numpy(np.stack([np.asarray(img if img.mode == "RGB" else img.convert("RGB"), dtype=np.uint8)
                                      for img in images]))


def to_unit_float(pixels: torch.Tensor) -> torch.Tensor:
    """(B, H, W, 3) uint8 -> (B, 3, H, W) float32 in [0, 1], on the pixels' device: divided by a tensor on that
    device, since CUDA multiplies by the reciprocal of a Python number, which is not bitwise the CPU's quotient."""
    return pixels.permute(0, 3, 1, 2).float().div_(torch.full((), 255.0, device=pixels.device))
