"""PoinCLIP's losses in the Poincaré ball (Srivastava & Wu 2024, Sec. 4.1-4.2).

Contrastive: CLIP's symmetric InfoNCE over the negative Poincaré distance (Eq. 2) times the learned
inverse temperature. Entailment: per image-text pair the embedding of lower entropy (Eq. 6) is the cone
apex x and the other y (or, for the "Poincaré" ablation, the text is always the apex, as in MERU);
`L_entail = max(0, ext(Oxy) - aper(x)) - lambda_reg * ext(Oxy)` (Eq. 7-9), averaged over the batch.
The paper leaves the entropy of a real-valued vector undefined; `ENTROPY_INPUTS` are the readings (see
`embedding_entropy`), the first the default: the one under which, as the paper assumes, entropy increases outward
along the cone, so the point nearer the origin is the apex. The order is a discrete choice per pair and carries no
gradient.

That holds along a ray, and between points whose coordinates are spread alike; the literal entropy also grows with
the spread. At norm r on k equal coordinates it is r sqrt(k) log2(sqrt(k) / r): an image on 256 of 512 coordinates
at norm 0.7 has 50.6 bits, a text on all 512 at norm 0.5 has 62.2, so the image, farther out, is the apex (as under
the other two readings: softmax reverses the radius order, abs ignores it). `apex_statistics` measures the order of
each batch, the training log's `apex_rate` and `apex_radius_agreement`: an agreement far below 1 means the entropy
order is not the radius order the paper assumes (replication/poinclip.yaml says what a paper-scale run checks).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from hypvl.geometry import poincare
from hypvl.geometry.precision import full_precision
from hypvl.losses.contrastive import times_inverse_temperature

ENTAILMENT_ORDERS = ("entropy", "text_entails_image")
ENTROPY_INPUTS = ("literal", "softmax", "abs")


@full_precision
def poincare_logits(a: Tensor, b: Tensor, curv: float | Tensor, logit_scale: Tensor | float) -> Tensor:
    """PoinCLIP logits: negative Poincaré distance times `exp(logit_scale)`.

    Args:
        a: (B1, D) query points in the ball.
        b: (B2, D) candidate points in the ball.
        curv: positive c of the curvature -c.
        logit_scale: log inverse temperature.
    Returns:
        (B1, B2) logits `-d_P(a_i, b_k) / tau`.
    """
    return times_inverse_temperature(-poincare.pairwise_dist(a, b, curv), logit_scale)


@full_precision
def embedding_entropy(x: Tensor, reading: str = "literal") -> Tensor:
    """Entropy in bits (PoinCLIP Eq. 6, `-sum_i x_i log2 x_i`) of each embedding, under one of three readings.

    Eq. 6 applies `x log2 x` to the coordinates, which is undefined for the negative ones; the readings:
      "literal": `-sum_i |x_i| log2 |x_i|` (0 log 0 = 0), Eq. 6 on the coordinates' magnitudes. For a point of the
                 ball every |x_i| < 1, and while every |x_i| < 1/e it grows along each ray from the origin (the
                 paper's assumption that entropy increases along the cone, whose apex lies nearer the origin);
      "softmax": p = softmax(x) over the D coordinates (a categorical with logits x); it falls along each ray;
      "abs":     p = |x| / ||x||_1 (depends on the direction only).

    Args:
        x: (B, D) embeddings.
        reading: one of `ENTROPY_INPUTS`.
    Returns:
        (B,) entropies; in [0, log2 D] for "softmax" and "abs".
    """
    if reading == "literal":
        nats = -torch.special.xlogy(x.abs(), x.abs()).sum(dim=-1)
    elif reading in ("softmax", "abs"):
        if reading == "softmax":
            log_p = torch.log_softmax(x, dim=-1)
        else:
            p = x.abs() / x.abs().sum(dim=-1, keepdim=True).clamp(min=torch.finfo(x.dtype).tiny)
            log_p = torch.log(p.clamp(min=torch.finfo(x.dtype).tiny))
        nats = -(log_p.exp() * log_p).sum(dim=-1)
    else:
        raise ValueError(f"entropy reading must be one of {list(ENTROPY_INPUTS)}; got {reading!r}")
    return nats / math.log(2.0)


def image_is_apex(image: Tensor, text: Tensor, order: str = "entropy", reading: str = "literal") -> Tensor:
    """(B,) bool: True where the image is the cone apex x of its pair, False where the text is.

    "entropy": the image when H(image) < H(text), else the text (a tie makes the text the apex);
    "text_entails_image": never (the text is always the apex; PoinCLIP's "Poincaré" ablation, MERU's order).
    """
    if order == "text_entails_image":
        return torch.zeros(image.shape[0], dtype=torch.bool, device=image.device)
    if order != "entropy":
        raise ValueError(f"entailment order must be one of {list(ENTAILMENT_ORDERS)}; got {order!r}")
    with torch.no_grad():
        return embedding_entropy(image, reading) < embedding_entropy(text, reading)


@full_precision
def apex_statistics(image: Tensor, text: Tensor, order: str = "entropy", reading: str = "literal") -> dict[str, Tensor]:
    """How `image_is_apex` ordered a batch of pairs (no gradient; it changes no loss).

    Returns:
        "apex_rate": the fraction of pairs whose apex is the image;
        "apex_radius_agreement": the fraction whose apex is not farther from the origin than the other point
            (Euclidean norms, which order the geodesic radii alike; equal norms agree with either apex).
    """
    with torch.no_grad():
        image_first = image_is_apex(image, text, order, reading)
        image_norm, text_norm = torch.linalg.vector_norm(image, dim=-1), torch.linalg.vector_norm(text, dim=-1)
        apex_norm = torch.where(image_first, image_norm, text_norm)
        other_norm = torch.where(image_first, text_norm, image_norm)
        return {"apex_rate": image_first.to(image.dtype).mean(),
                "apex_radius_agreement": (apex_norm <= other_norm).to(image.dtype).mean()}


@full_precision
def cone_loss(apex: Tensor, other: Tensor, curv: float | Tensor, lambda_reg: float, min_radius: float = 0.1) -> Tensor:
    """`mean(max(0, ext(O apex other) - aper(apex)) - lambda_reg * ext(O apex other))` (PoinCLIP Eq. 9).

    Args:
        apex: (B, D) points x in the ball, the entailing concepts.
        other: (B, D) points y that should lie in the cone of x.
        curv: positive c of the curvature -c.
        lambda_reg: weight of the reward for a wide exterior angle (the loss can be negative).
        min_radius: the cone constant K of Eq. 8.
    Returns:
        () loss.
    """
    angle = poincare.oxy_angle(apex, other, curv)
    aperture = poincare.half_aperture(apex, curv, min_radius=min_radius)
    return (torch.clamp(angle - aperture, min=0) - lambda_reg * angle).mean()


def poinclip_entailment(image: Tensor, text: Tensor, curv: float | Tensor, lambda_reg: float,
                        order: str = "entropy", reading: str = "literal") -> Tensor:
    """PoinCLIP's L_entail over a batch of pairs: each pair's apex chosen by `image_is_apex`, then `cone_loss`.

    Args:
        image, text: (B, D) points in the ball, row i of each from the same pair.
        curv: positive c of the curvature -c.
        lambda_reg: Eq. 9's regulariser weight.
        order: one of `ENTAILMENT_ORDERS`.
        reading: one of `ENTROPY_INPUTS` (used by the "entropy" order).
    Returns:
        () loss.
    """
    image_first = image_is_apex(image, text, order, reading).unsqueeze(-1)
    apex = torch.where(image_first, image, text)
    other = torch.where(image_first, text, image)
    return cone_loss(apex, other, curv, lambda_reg)
