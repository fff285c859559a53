"""Contrastive (InfoNCE / multi-class N-pair) losses: CLIP, MERU and HyCoCLIP's hCC.

Logits are similarities times `exp(logit_scale)`, where `logit_scale = log(1/tau)` is the
learned log inverse temperature (clamping it is the model's job). Losses are means over
the query rows, as in the reference code. Everything computes in float32 under autocast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from hypvl.geometry import lorentz
from hypvl.geometry.precision import full_precision
from hypvl.losses.distributed import gather_with_grad

HCC_TERMS = ("i2t", "t2i", "boxi2t", "boxt2i")


@full_precision
def info_nce(logits: Tensor, offset: int = 0) -> Tensor:
    """Mean cross-entropy of each row (query) against its positive column.

    Args:
        logits: (B1, B2) scores, rows are queries, columns candidates.
        offset: column of row 0's positive; row i's positive is column `offset + i`
            (`rank * B1` when the columns were gathered across ranks).
    Returns:
        () mean over rows of `-log softmax(logits[i])[offset + i]`. The positive is part of
        the softmax denominator.
    """
    targets = torch.arange(logits.shape[0], device=logits.device) + offset
    return F.cross_entropy(logits, targets)


def symmetric_contrastive(logits: Tensor) -> Tensor:
    """CLIP/MERU contrastive loss: `0.5 * (info_nce(logits) + info_nce(logits.T))`.

    Args:
        logits: (B, B) image-to-text scores, matching pairs on the diagonal.
    Returns:
        () the average of the image-to-text and text-to-image losses.
    """
    return 0.5 * (info_nce(logits) + info_nce(logits.T))


def global_contrastive(logits_of: Callable[[Tensor, Tensor], Tensor], images: Tensor, texts: Tensor) -> Tensor:
    """`symmetric_contrastive` over the global batch: this rank's images against every rank's texts and its texts
    against every rank's images (gathered with gradients, `hypvl.losses.distributed`).

    Args:
        logits_of: (queries (B1, D), candidates (B2, D)) -> (B1, B2) logits of a symmetric similarity.
        images, texts: (B, D) this rank's embeddings, pairs row by row.
    Returns:
        () the mean of the image-to-text and text-to-image losses of this rank's pairs.
    """
    all_images, offset = gather_with_grad(images)
    if all_images is images:  # one process
        return symmetric_contrastive(logits_of(images, texts))
    all_texts, _ = gather_with_grad(texts)
    return 0.5 * (info_nce(logits_of(images, all_texts), offset) + info_nce(logits_of(texts, all_images), offset))


@full_precision
def clip_logits(a: Tensor, b: Tensor, logit_scale: Tensor | float) -> Tensor:
    """CLIP logits: cosine similarities of L2-normalised features times `exp(logit_scale)`.

    Args:
        a: (B1, D) query features.
        b: (B2, D) candidate features.
        logit_scale: log inverse temperature.
    Returns:
        (B1, B2) logits.
    """
    scale = torch.exp(torch.as_tensor(logit_scale, dtype=a.dtype, device=a.device))
    return scale * F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


def times_inverse_temperature(similarity: Tensor, logit_scale: Tensor | float) -> Tensor:
    """(B1, B2) similarities times `exp(logit_scale)`: the logits of a learned-temperature contrastive loss."""
    return similarity * torch.exp(torch.as_tensor(logit_scale, dtype=similarity.dtype, device=similarity.device))


@full_precision
def lorentz_logits(
    a: Tensor, b: Tensor, curv: float | Tensor, logit_scale: Tensor | float
) -> Tensor:
    """MERU/HyCoCLIP logits: negative Lorentzian distance times `exp(logit_scale)`.

    Args:
        a: (B1, D) space components of query embeddings.
        b: (B2, D) space components of candidate embeddings.
        curv: positive c of the curvature -c.
        logit_scale: log inverse temperature.
    Returns:
        (B1, B2) logits `-d_L(a_i, b_k) / tau`.
    """
    return times_inverse_temperature(-lorentz.pairwise_dist(a, b, curv), logit_scale)


@full_precision
def lorentz_inner_logits(
    a: Tensor, b: Tensor, curv: float | Tensor, logit_scale: Tensor | float
) -> Tensor:
    """MERU Table 4 row 3's logits: the Lorentzian inner product (Eq. 1) times `exp(logit_scale)`.

    The inner product replaces the negative distance as the similarity; it is unbounded in
    (-inf, -1/curv], which is why MERU's ViT-L/16 run with it overflowed.

    Args:
        a: (B1, D) space components of query embeddings.
        b: (B2, D) space components of candidate embeddings.
        curv: positive c of the curvature -c.
        logit_scale: log inverse temperature.
    Returns:
        (B1, B2) logits `<a_i, b_k>_L / tau`.
    """
    return times_inverse_temperature(lorentz.pairwise_inner(a, b, curv), logit_scale)


def check_terms(terms: Sequence[str], known: Sequence[str]) -> None:
    """Raise ValueError unless `terms` is a non-empty set of names drawn from `known`."""
    unknown = [t for t in terms if t not in known]
    if unknown or not terms or len(set(terms)) != len(terms):
        raise ValueError(
            f"loss terms must be distinct names from {list(known)}, at least one; got {list(terms)}"
        )


def hcc_loss(
    image: Tensor,
    text: Tensor,
    box_image: Tensor,
    box_text: Tensor,
    curv: float | Tensor,
    logit_scale: Tensor | float,
    terms: Sequence[str] = HCC_TERMS,
    *,
    all_image: Tensor | None = None,
    all_text: Tensor | None = None,
    offset: int = 0,
) -> Tensor:
    """HyCoCLIP hierarchical Compositional Contrastive loss (Eq. 5-6).

    The mean of the enabled terms among
      "i2t":    L*_cont(I, T)      images against the batch's captions,
      "t2i":    L*_cont(T, I)      captions against the batch's images,
      "boxi2t": L*_cont(I^box, T)  box crops against the batch's *whole* captions,
      "boxt2i": L*_cont(T^box, I)  box phrases against the batch's *whole* images,
    each `info_nce(lorentz_logits(query, candidates))`, the positive being the pair's own
    caption/image. With all four enabled this is Eq. 6's 1/4 * sum. Removing terms (Table 4
    ablation) divides by the number of enabled terms (1/3 with three), so the loss stays an
    average. As in the reference code the positive is in the softmax denominator; Eq. 5 as
    printed sums over k != i, and writes d_L where -d_L is meant.

    Args:
        image, text, box_image, box_text: (B, D) space components; row i of each comes from
            the same sample.
        curv: positive c of the curvature -c.
        logit_scale: log inverse temperature.
        terms: enabled term names (distinct, non-empty subset of `HCC_TERMS`).
        all_image, all_text: (N, D) candidate columns; by default the images/texts of every
            rank, gathered as in the reference code (boxes are never gathered).
        offset: column of row 0's positive among given candidates (`rank * B` when gathered).
    Returns:
        () loss.
    """
    check_terms(terms, HCC_TERMS)
    if all_image is None and all_text is None:  # the global batch
        all_image, offset = gather_with_grad(image)
        all_text, _ = gather_with_grad(text)
    all_image = image if all_image is None else all_image
    all_text = text if all_text is None else all_text
    pairs = {
        "i2t": (image, all_text),
        "t2i": (text, all_image),
        "boxi2t": (box_image, all_text),
        "boxt2i": (box_text, all_image),
    }
    losses = [info_nce(lorentz_logits(*pairs[t], curv, logit_scale), offset) for t in terms]
    return torch.stack(losses).mean()
