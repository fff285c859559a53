"""Batched, no-grad feature extraction shared by the evaluation tasks.

Batches are prepared (images decoded and resized, texts tokenized) by worker threads a few batches
ahead of the encoder, so loading overlaps the forward pass (PIL and torch release the GIL). Every
result is checked for NaN/Inf, and the error names the dataset.
"""

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import torch
from PIL import Image

from hypvl.data.transforms import to_tensor_batch
from hypvl.evaluate.metrics import check_finite


LOADER_THREADS = min(4, os.cpu_count() or 1)


def prefetched(make: Callable[[int], object], starts: Sequence[int], threads: int = LOADER_THREADS) -> Iterator:
    """make(start) for each start, in order, computed by `threads` workers up to threads + 1 batches ahead."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        pending: deque = deque()
        upcoming = iter(starts)
        for start in upcoming:
            pending.append(pool.submit(make, start))
            if len(pending) > threads:
                break
        while pending:
            batch = pending.popleft().result()
            following = next(upcoming, None)
            if following is not None:
                pending.append(pool.submit(make, following))
            yield batch


@torch.no_grad()
def encode_images(encode: Callable[[torch.Tensor], torch.Tensor], load: Callable[[int], Image.Image], count: int,
                  view: Callable[[Image.Image], Image.Image], batch_size: int, name: str) -> torch.Tensor:
    """(count, D) = encode(batch of `view(load(i))`), i < count; a NaN/Inf is an error naming `name`."""

    def batch(start: int) -> torch.Tensor:
        return to_tensor_batch([view(load(i)) for i in range(start, min(count, start + batch_size))])

    out = [encode(images) for images in prefetched(batch, range(0, count, batch_size))]
    feats = torch.cat(out) if out else torch.empty(0)
    check_finite(name, feats)
    return feats


def image_embeddings(model, load: Callable[[int], Image.Image], count: int,
                     view: Callable[[Image.Image], Image.Image], batch_size: int, name: str) -> torch.Tensor:
    """(count, D) embeddings (unit vectors or hyperboloid points) of images `view(load(i))`, i < count."""
    return encode_images(model.encode_image, load, count, view, batch_size, f"{name} image embeddings")


def trunk_features(model, load: Callable[[int], Image.Image], count: int,
                   view: Callable[[Image.Image], Image.Image], batch_size: int, name: str) -> torch.Tensor:
    """(count, width) visual trunk outputs, before the projection (linear-probe features)."""
    return encode_images(model.trunk_features, load, count, view, batch_size, f"{name} trunk features")


@torch.no_grad()
def text_features(model, tokenizer, texts: Sequence[str], batch_size: int, name: str) -> torch.Tensor:
    """(len(texts), D) projected text features, before normalisation or the exponential map; batches are
    tokenized one batch ahead of the encoder (the tokenizer is Python, so one thread)."""
    batches = prefetched(lambda i: tokenizer(texts[i:i + batch_size]), range(0, len(texts), batch_size), threads=1)
    out = [model.text_features(tokens) for tokens in batches]
    feats = torch.cat(out)
    check_finite(f"{name} text features", feats)
    return feats


def text_embeddings(model, tokenizer, texts: Sequence[str], batch_size: int, name: str) -> torch.Tensor:
    """(len(texts), D) text embeddings (unit vectors or hyperboloid points)."""
    feats = model.embed_text(text_features(model, tokenizer, texts, batch_size, name))
    check_finite(f"{name} text embeddings", feats)
    return feats
