"""The HierarCaps paper's metrics (Alper & Averbuch-Elor 2024): HierarCaps precision/recall of radius-threshold
retrieval and the order-aware tau_d (Sec. 6.1, App. B.5; code TAU-VAILab/hierarcaps eval.py), and HyperLex's
Spearman rho (Table 6)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from hypvl.evaluate.metrics.checks import check_finite, same_length

HierarCapsVariant = Literal["paper", "code"]


def hierarcaps_retrieved(
    similarity: torch.Tensor | np.ndarray,
    text_radii: torch.Tensor | np.ndarray,
    *,
    variant: HierarCapsVariant,
    steps: int = 50,
) -> torch.Tensor:
    """(I, T) bool: the texts retrieved for each image by HierarCaps' radius-threshold retrieval.

    similarity: (I, T) image-text score over the candidate texts (cosine for CLIP; higher = closer).
    text_radii: (T,) d_r(e), each candidate text's distance from the root (the empty-string embedding).
    At each of `steps` radius levels the retrieved text is the one most similar to the image among texts
    with radius <= level. variant="paper" (App. B.5): per image, levels equally spaced from the root (0) to
    the radius of the text closest to the image, and the prediction closest to the root is omitted.
    variant="code" (released eval.py): levels are linspace(min, max) of all text radii, shared by every
    image, and nothing is omitted.
    """
    similarity, text_radii = torch.as_tensor(similarity), torch.as_tensor(text_radii)
    check_finite("similarity", similarity)
    check_finite("text_radii", text_radii)
    if similarity.shape[1:] != text_radii.shape:
        raise ValueError(f"similarity {tuple(similarity.shape)} does not match text_radii {tuple(text_radii.shape)}")
    fraction = torch.arange(steps, dtype=text_radii.dtype) / (steps - 1)
    if variant == "code":
        low, high = text_radii.min(), text_radii.max()
        levels = (low + (high - low) * fraction).expand(similarity.shape[0], steps)
    elif variant == "paper":
        nearest_radius = text_radii[similarity.argmax(dim=1)]
        levels = nearest_radius[:, None] * fraction[None, :]
    else:
        raise ValueError(f"variant must be 'paper' or 'code', not {variant!r}")
    predictions, valid = [], []
    for step in range(steps):
        allowed = text_radii[None, :] <= levels[:, step : step + 1]
        predictions.append(similarity.masked_fill(~allowed, -torch.inf).argmax(dim=1))
        valid.append(allowed.any(dim=1))
    predictions, valid = torch.stack(predictions, dim=1), torch.stack(valid, dim=1)
    retrieved = torch.zeros(similarity.shape, dtype=torch.bool)
    rows = torch.arange(similarity.shape[0])[:, None].expand_as(predictions)
    retrieved[rows[valid], predictions[valid]] = True
    if variant == "paper":
        # Candidate sets only grow with the level, so the first prediction never reappears later.
        first = predictions.gather(1, valid.double().argmax(dim=1, keepdim=True)).squeeze(1)
        retrieved[torch.arange(similarity.shape[0]), first] = False
    return retrieved


def hierarcaps_precision_recall(
    similarity: torch.Tensor | np.ndarray,
    text_radii: torch.Tensor | np.ndarray,
    ground_truth: torch.Tensor | np.ndarray,
    *,
    variant: HierarCapsVariant,
    steps: int = 50,
    image_of: torch.Tensor | np.ndarray | None = None,
) -> dict[str, float]:
    """HierarCaps P and R as fractions, averaged over images.

    ground_truth: (N, K) indices into the candidate texts of each test row's K (= 4) ground-truth captions, most
    general tier first. image_of: (N,) the image (row of `similarity`) of each test row; None: row i's is image i.
    Each image is scored once against the captions of every row that shows it, as the released eval.py does
    (several COCO captions may describe one image): P = |retrieved & GT| / max(1, |retrieved|), GT the union of
    its rows' captions; R = the fraction of the K tiers whose caption, of any of its rows, is retrieved.
    similarity, text_radii, variant, steps: as in `hierarcaps_retrieved`.
    """
    retrieved = hierarcaps_retrieved(similarity, text_radii, variant=variant, steps=steps)
    ground_truth = torch.as_tensor(ground_truth).long()
    num_images = retrieved.shape[0]
    image_of = torch.arange(ground_truth.shape[0]) if image_of is None else torch.as_tensor(image_of).long()
    if image_of.shape != ground_truth.shape[:1] or not torch.equal(image_of.unique(), torch.arange(num_images)):
        raise ValueError(f"the {ground_truth.shape[0]} ground-truth rows must show each of the {num_images} images")
    rows = image_of[:, None].expand_as(ground_truth)
    gt_mask = torch.zeros_like(retrieved)
    gt_mask[rows, ground_truth] = True
    precision = (retrieved & gt_mask).sum(dim=1).double() / retrieved.sum(dim=1).clamp(min=1)
    tier_found = torch.zeros(num_images, ground_truth.shape[1], dtype=torch.float64)
    tier_found.index_add_(0, image_of, retrieved[rows, ground_truth].double())
    recall = (tier_found > 0).double().mean(dim=1)
    return {"precision": precision.mean().item(), "recall": recall.mean().item()}


def kendall_tau_d(radii: torch.Tensor | np.ndarray, *, variant: HierarCapsVariant) -> float:
    """HierarCaps' order-aware tau_d: mean over items of Kendall's tau between radii and tier order.

    radii: (M, K) d_r(e) of each item's K ground-truth texts, most general tier first; tau = 1 when radii
    increase with the tier. variant="paper": tau-b of (radii, 1..K) (scipy's default), which discounts tied
    radii and is undefined (error) for an item whose radii are all equal. variant="code": tau of
    (argsort(radii), 1..K) as in the released eval.py; the stable argsort makes tied radii count as
    correctly ordered.
    """
    from scipy.stats import kendalltau

    radii = torch.as_tensor(radii).double()
    check_finite("radii", radii)
    if variant not in ("paper", "code"):
        raise ValueError(f"variant must be 'paper' or 'code', not {variant!r}")
    radii = radii.numpy()
    if variant == "paper":
        constant = (radii == radii[:, :1]).all(axis=1)
        if constant.any():
            item = int(constant.nonzero()[0][0])
            raise ValueError(f"kendall_tau_d: tau-b undefined for item {item}, all its radii are equal")
    else:
        radii = np.argsort(radii, axis=1, kind="stable")
    order = np.arange(radii.shape[1])
    return float(np.mean([kendalltau(row, order).statistic for row in radii]))


def spearman_rho(pred: torch.Tensor | np.ndarray, target: torch.Tensor | np.ndarray) -> float:
    """Spearman's rank correlation of (N,) predicted and (N,) true scores (ties get average ranks), in [-1, 1]
    (HyperLex's rho, HierarCaps paper Table 6)."""
    from scipy.stats import spearmanr

    pred, target = torch.as_tensor(pred).double(), torch.as_tensor(target).double()
    check_finite("pred", pred)
    same_length(pred, target)
    if any(bool((x == x[0]).all()) for x in (pred, target)):
        raise ValueError("spearman_rho: undefined when either input is constant")
    return float(spearmanr(pred.numpy(), target.numpy()).statistic)
