"""Compositional benchmarks: ARO VG-Attribution macro accuracy and VL-CheckList ITC accuracy."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import torch

from hypvl.evaluate.metrics.checks import check_finite, same_length


def vg_attribution_macro_accuracy(
    correct: torch.Tensor | np.ndarray | Sequence[bool],
    pair_ids: Sequence[Hashable] | np.ndarray | torch.Tensor,
    min_count: int = 25,
) -> float:
    """ARO VG-Attribution macro accuracy in percent: mean over attribute pairs of the pair's accuracy.

    correct: (N,) bool, the true caption outscored the attribute-swapped one (a tie is wrong, as ARO's
    argmax picks the swapped caption listed first). pair_ids: (N,) the sample's attribute pair, e.g.
    f"{attr0}_{attr1}" as ARO groups them. Pairs with fewer than `min_count` samples are dropped (ARO: 25).
    """
    correct = torch.as_tensor(np.asarray(correct, dtype=bool))
    groups, index = np.unique(np.asarray(pair_ids), return_inverse=True)
    if len(index) != len(correct):
        raise ValueError(f"{len(correct)} results but {len(index)} pair ids")
    index = torch.as_tensor(index.reshape(-1))
    counts = torch.bincount(index, minlength=len(groups))
    hits = torch.bincount(index, weights=correct.double(), minlength=len(groups))
    kept = counts >= min_count
    if not kept.any():
        raise ValueError(f"vg_attribution_macro_accuracy: no attribute pair has >= {min_count} samples")
    return 100.0 * (hits[kept] / counts[kept]).mean().item()


def itc_accuracy(pos_scores: torch.Tensor | np.ndarray, neg_scores: torch.Tensor | np.ndarray) -> float:
    """VL-CheckList ITC accuracy in percent: share of images whose positive caption scores strictly above
    the negative one (pos_scores, neg_scores: (N,) image-caption scores; ties count as wrong)."""
    pos_scores, neg_scores = torch.as_tensor(pos_scores), torch.as_tensor(neg_scores)
    check_finite("pos_scores", pos_scores)
    check_finite("neg_scores", neg_scores)
    same_length(pos_scores, neg_scores)
    return 100.0 * (pos_scores > neg_scores).double().mean().item()
