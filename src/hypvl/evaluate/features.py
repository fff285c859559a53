"""Batched, no-grad feature extraction shared by the evaluation tasks."""

from collections.abc import Callable, Sequence

import torch
from PIL import Image

from hypvl.data.transforms import to_tensor_batch
from hypvl.evaluate.metrics import check_finite


@torch.no_grad()
def image_embeddings(model, load: Callable[[int], Image.Image], count: int,
                     view: Callable[[Image.Image], Image.Image], batch_size: int, name: str) -> torch.Tensor:
    """(count, D) embeddings of images `view(load(i))`, i < count; NaN/Inf is an error naming `name`."""
    out = []
    for start in range(0, count, batch_size):
        batch = to_tensor_batch([view(load(i)) for i in range(start, min(count, start + batch_size))])
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
