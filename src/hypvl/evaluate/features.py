"""Batched, no-grad feature extraction shared by the evaluation tasks.

Batches are prepared (images decoded and resized, texts tokenized) by worker threads a few batches
ahead of the encoder, so loading overlaps the forward pass (PIL and torch release the GIL). Every
result is checked for NaN/Inf, and the error names the dataset. With `set_loader_workers(n)` (the evaluation
command passes `eval.num_workers`) images are decoded and resized in n DataLoader worker processes instead, which
keep a GPU busy where a few threads of one process cannot: the same pixels, so bitwise the same features.
Pixels travel to the encoder's device as uint8 (a quarter of float32's bytes, from pinned memory without waiting)
and become floats there; each batch's features stay there until the last batch is encoded, so that the device
computes one batch while the next is gathered.
"""

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from hypvl.data.transforms import to_uint8_batch, to_unit_float
from hypvl.runtime.devices import device_encoder
from hypvl.errors import InputError
from hypvl.evaluate.metrics.checks import check_finite
from hypvl.runtime.loader_processes import check_shared_memory, worker_deaths


LOADER_THREADS = min(4, os.cpu_count() or 1)
PREFETCH = 2  # parts of a batch each loader process makes ahead
_loader = {"workers": 0}  # set_loader_workers


def set_loader_workers(workers: int) -> None:
    """Decode and resize images in `workers` DataLoader processes from now on; 0: in LOADER_THREADS threads."""
    _loader["workers"] = workers


def check_loader_memory(batch_size: int, image_size: int) -> None:
    """Refuse, before any loader process starts, where /dev/shm cannot hold the pixels they would put there: each
    process's part of a batch of `image_size` squares, PREFETCH of them ahead and one more while the batch's parts
    are gathered (a bus error in a loader process otherwise, at the first set)."""
    workers = _loader["workers"]
    part = _part_size(batch_size, workers) * 3 * image_size**2 if workers else 0
    check_shared_memory(part, workers, PREFETCH + 1, "eval.num_workers", unit="parts of a batch")


def _part_size(batch_size: int, workers: int) -> int:
    """Images of each loader process's part of a batch: the batch spread over all of them."""
    return -(-batch_size // workers)


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


class _Views(Dataset):
    """view(load(i)), i < count, in a loader process; a bad image's InputError is returned, not raised (the
    DataLoader would re-raise it wrapped in the worker's traceback)."""

    def __init__(self, load: Callable[[int], Image.Image], view: Callable[[Image.Image], Image.Image], count: int):
        self.load, self.view, self.count = load, view, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        try:
            return self.view(self.load(index))
        except InputError as exc:
            return exc


def _uint8_batch(items: list) -> torch.Tensor | InputError:
    """A loader process's batch: (B, H, W, 3) uint8 pixels (what `to_tensor_batch` starts from), or its first error."""
    error = next((item for item in items if isinstance(item, InputError)), None)
    return to_uint8_batch(items) if error is None else error


def worker_batches(views: _Views, batch_size: int, workers: int) -> Iterator[torch.Tensor]:
    """The (B, H, W, 3) uint8 batches `to_uint8_batch` would make of `views`, in order, from `workers` processes, each
    batch decoded in chunks spread over all of them. The processes are forked (`load` and `view` are closures over
    the task's data, which only a fork carries over)."""
    chunk = _part_size(batch_size, workers)
    chunks = [(start, range(first, min(first + chunk, start + batch_size, len(views))))
              for start in range(0, len(views), batch_size)
              for first in range(start, min(start + batch_size, len(views)), chunk)]
    loader = DataLoader(views, batch_sampler=[list(indices) for _, indices in chunks], num_workers=workers,
                        collate_fn=_uint8_batch, multiprocessing_context="fork", prefetch_factor=PREFETCH)
    with worker_deaths("eval.num_workers"):
        for _, parts in itertools.groupby(zip((start for start, _ in chunks), loader), key=lambda pair: pair[0]):
            pixels = [part for _, part in parts]
            error = next((part for part in pixels if isinstance(part, InputError)), None)
            if error is not None:
                raise error
            yield torch.cat(pixels)


@torch.no_grad()
def encode_images(encode: Callable[[torch.Tensor], torch.Tensor], load: Callable[[int], Image.Image], count: int,
                  view: Callable[[Image.Image], Image.Image], batch_size: int, name: str,
                  device: torch.device = torch.device("cpu")) -> torch.Tensor:
    """(count, D) float32 on the CPU = encode(batch of `view(load(i))`), i < count, where `encode` takes and returns
    tensors on `device` (`hypvl.runtime.devices.device_encoder`); a NaN/Inf is an error naming `name`."""

    def batch(start: int) -> torch.Tensor:
        return to_uint8_batch([view(load(i)) for i in range(start, min(count, start + batch_size))])

    workers, pinned = _loader["workers"], device.type == "cuda"
    batches = (worker_batches(_Views(load, view, count), batch_size, workers) if workers
               else prefetched(batch, range(0, count, batch_size)))
    out = [encode(to_unit_float((pixels.pin_memory() if pinned else pixels).to(device, non_blocking=pinned)))
           for pixels in batches]
    feats = torch.cat(out).float().cpu() if out else torch.empty(0)
    check_finite(name, feats)
    return feats


def image_embeddings(model, load: Callable[[int], Image.Image], count: int,
                     view: Callable[[Image.Image], Image.Image], batch_size: int, name: str) -> torch.Tensor:
    """(count, D) embeddings (unit vectors or hyperboloid points) of images `view(load(i))`, i < count."""
    encode, device = device_encoder(model, "encode_image")
    return encode_images(encode, load, count, view, batch_size, f"{name} image embeddings", device)


def trunk_features(model, load: Callable[[int], Image.Image], count: int,
                   view: Callable[[Image.Image], Image.Image], batch_size: int, name: str) -> torch.Tensor:
    """(count, width) visual trunk outputs, before the projection (linear-probe features)."""
    encode, device = device_encoder(model, "trunk_features")
    return encode_images(encode, load, count, view, batch_size, f"{name} trunk features", device)


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
