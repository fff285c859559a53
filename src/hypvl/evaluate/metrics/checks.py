"""Input checks every metric shares: non-finite embeddings or scores (an InputError), paired per-sample lengths, and
class labels from indices or scores."""

from __future__ import annotations

import numpy as np
import torch

from hypvl.errors import InputError


class NonFiniteEmbeddingError(InputError):
    """Embeddings or scores handed to a metric contain NaN or Inf (an InputError, so `hypvl` reports it as
    one line: the checkpoint under evaluation is unusable)."""


def check_finite(name: str, tensor: torch.Tensor | np.ndarray) -> None:
    """Raise NonFiniteEmbeddingError naming `name`, the count and first row of non-finite entries."""
    tensor = torch.as_tensor(tensor)
    if not tensor.is_floating_point():
        return
    bad = ~torch.isfinite(tensor)
    if bad.any():
        rows = bad.reshape(bad.shape[0], -1).any(dim=1) if bad.ndim > 0 else bad.reshape(1)
        first = int(rows.nonzero()[0, 0])
        raise NonFiniteEmbeddingError(
            f"{name}: {int(bad.sum())} NaN/Inf value(s) in {int(rows.sum())} row(s) of shape "
            f"{tuple(tensor.shape)}, first at row {first}"
        )


def class_labels(pred: torch.Tensor | np.ndarray) -> torch.Tensor:
    """(N,) class indices from (N,) indices or (N, C) scores (argmax)."""
    pred = torch.as_tensor(pred)
    if pred.ndim == 2:
        check_finite("scores", pred)
        return pred.argmax(dim=1)
    return pred.long()


def same_length(a: torch.Tensor, b: torch.Tensor) -> None:
    """Paired per-sample inputs must have equal, non-zero length."""
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"length mismatch: {a.shape[0]} vs {b.shape[0]}")
    if a.shape[0] == 0:
        raise ValueError("no samples")
