"""Batched, no-grad feature extraction shared by the evaluation tasks."""

from collections.abc import Callable, Sequence

import torch
from PIL import Image
from torchvision.transforms import v2

from hypvl.evaluate.metrics import check_finite


def center_crop_transform(image_size: int) -> v2.Compose:
    """Resize the shorter side to `image_size` (bicubic) and centre-crop: MERU's classification transform."""
    return v2.Compose([v2.ToImage(), v2.Resize(image_size, interpolation=v2.InterpolationMode.BICUBIC,
                                               antialias=True),
                       v2.CenterCrop(image_size), v2.ToDtype(torch.float32, scale=True)])


def squeeze_transform(image_size: int) -> v2.Compose:
    """Resize to `image_size` x `image_size` without cropping: MERU's retrieval transform."""
    return v2.Compose([v2.ToImage(), v2.Resize((image_size, image_size),
                                               interpolation=v2.InterpolationMode.BICUBIC, antialias=True),
                       v2.ToDtype(torch.float32, scale=True)])


@torch.no_grad()
def image_embeddings(model, load: Callable[[int], Image.Image], count: int, transform, batch_size: int,
                     name: str) -> torch.Tensor:
    """(count, D) embeddings of images `load(0..count-1)`; NaN/Inf is an error naming `name`."""
    out = []
    for start in range(0, count, batch_size):
        batch = torch.stack([transform(load(i)) for i in range(start, min(count, start + batch_size))])
        out.append(model.encode_image(batch))
    feats = torch.cat(out)
    check_finite(f"{name} image embeddings", feats)
    return feats


@torch.no_grad()
def text_features(model, tokenizer, texts: Sequence[str], batch_size: int, name: str) -> torch.Tensor:
    """(len(texts), D) projected text features, before normalisation or the exponential map."""
    out = [model.text_features(tokenizer(texts[i:i + batch_size])) for i in range(0, len(texts), batch_size)]
    feats = torch.cat(out)
    check_finite(f"{name} text features", feats)
    return feats
