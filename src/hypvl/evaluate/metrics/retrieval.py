"""Retrieval recall@K, for positives given as a mask, one index per query, or lists of indices."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from hypvl.evaluate.metrics.checks import check_finite


def recall_at_k(
    scores: torch.Tensor | np.ndarray,
    positives: torch.Tensor | np.ndarray | Sequence[Sequence[int]],
    ks: Sequence[int] = (1, 5, 10),
    chunk_size: int = 1024,
) -> dict[int, float]:
    """Retrieval recall@K in percent: a query counts when any of its positives is among its K best items.

    scores: (Q, N), higher = better match. positives: a (Q, N) bool mask, a (Q,) tensor holding one
    positive index per query, a (Q, P) integer tensor padded with -1, or Q lists of indices. Queries are
    processed `chunk_size` at a time with torch.topk(max K), so memory beyond `scores` is O(chunk_size * K).
    Ties in scores are broken by torch.topk.
    """
    scores = torch.as_tensor(scores)
    check_finite("scores", scores)
    num_queries, num_items = scores.shape
    positives = _positives(positives, num_queries, num_items)
    has_positive = positives.any(dim=1) if positives.dtype == torch.bool else (positives >= 0).any(dim=1)
    if not has_positive.all():
        missing = int((~has_positive).nonzero()[0, 0])
        raise ValueError(f"recall_at_k: {int((~has_positive).sum())} queries have no positive, first: query {missing}")
    max_k = min(max(ks), num_items)
    hits = dict.fromkeys(ks, 0)
    for start in range(0, num_queries, chunk_size):
        top = scores[start : start + chunk_size].topk(max_k, dim=1).indices
        chunk_positives = positives[start : start + chunk_size].to(top.device)
        if chunk_positives.dtype == torch.bool:
            is_positive = chunk_positives.gather(1, top)
        else:
            is_positive = (top[:, :, None] == chunk_positives[:, None, :]).any(dim=2)
        for k in ks:
            hits[k] += int(is_positive[:, :k].any(dim=1).sum())
    return {k: 100.0 * hits[k] / num_queries for k in ks}


def _positives(positives, num_queries: int, num_items: int) -> torch.Tensor:
    """Positives as a (Q, N) bool mask or a (Q, P) long tensor padded with -1."""
    if isinstance(positives, (torch.Tensor, np.ndarray)):
        positives = torch.as_tensor(positives)
        if positives.dtype == torch.bool:
            if positives.shape != (num_queries, num_items):
                raise ValueError(f"positives mask has shape {tuple(positives.shape)}, scores {(num_queries, num_items)}")
            return positives
        positives = positives.long().reshape(positives.shape[0], -1)
    else:
        lists = [list(p) for p in positives]
        width = max((len(p) for p in lists), default=0)
        positives = torch.full((len(lists), width), -1, dtype=torch.long)
        for row, p in enumerate(lists):
            positives[row, : len(p)] = torch.as_tensor(p, dtype=torch.long)
    if positives.shape[0] != num_queries:
        raise ValueError(f"positives given for {positives.shape[0]} queries, scores have {num_queries}")
    if positives.numel() and (positives.max() >= num_items or positives.min() < -1):
        raise ValueError(f"positive indices must lie in [0, {num_items}) (-1 pads)")
    return positives
