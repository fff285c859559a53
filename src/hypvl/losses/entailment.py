"""Entailment-cone losses in the Lorentz model: MERU's L_entail and HyCoCLIP's hCE."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from hypvl.geometry import lorentz
from hypvl.geometry.precision import full_precision
from hypvl.losses.contrastive import check_terms

HCE_TERMS = ("t_i", "tbox_ibox", "ibox_i", "tbox_t")


@full_precision
def entailment_residuals(
    general: Tensor,
    specific: Tensor,
    curv: float | Tensor,
    eta: float = 1.0,
    min_radius: float = 0.1,
) -> Tensor:
    """Angular residual of each `specific[i]` outside the cone of `general[i]`.

    `max(0, oxy_angle(general, specific) - eta * half_aperture(general))`: MERU Eq. 12 with
    eta = 1 (general = text, specific = image), HyCoCLIP Eq. 10 otherwise.

    Args:
        general: (B, D) space components of the cone apexes (the entailing concepts).
        specific: (B, D) space components of the entailed concepts.
        curv: positive c of the curvature -c.
        eta: aperture threshold scaling the half-aperture (HyCoCLIP eta).
        min_radius: the aperture constant K.
    Returns:
        (B,) residuals, zero where `specific[i]` lies in the (eta-scaled) cone of `general[i]`.
    """
    angle = lorentz.oxy_angle(general, specific, curv)
    aperture = lorentz.half_aperture(general, curv, min_radius=min_radius)
    return torch.clamp(angle - eta * aperture, min=0)


@full_precision
def entailment_loss(
    general: Tensor,
    specific: Tensor,
    curv: float | Tensor,
    eta: float = 1.0,
    min_radius: float = 0.1,
) -> Tensor:
    """() mean of `entailment_residuals` (arguments as there): MERU's and HyCoCLIP's L_ent."""
    return entailment_residuals(general, specific, curv, eta, min_radius).mean()


def hce_loss(
    image: Tensor,
    text: Tensor,
    box_image: Tensor,
    box_text: Tensor,
    curv: float | Tensor,
    eta_inter: float = 0.7,
    eta_intra: float = 1.2,
    terms: Sequence[str] = HCE_TERMS,
) -> Tensor:
    """HyCoCLIP hierarchical Compositional Entailment loss (Eq. 11): a plain sum.

    The sum of the enabled terms among (L*_ent(p, q): q entails p)
      "t_i":       L*_ent(I, T)          text entails image,            eta_inter,
      "tbox_ibox": L*_ent(I^box, T^box)  box phrase entails box crop,   eta_inter,
      "ibox_i":    L*_ent(I, I^box)      box crop entails whole image,  eta_intra,
      "tbox_t":    L*_ent(T, T^box)      box phrase entails caption,    eta_intra,
    each `entailment_loss(general=q, specific=p, eta)`. Not averaged: removing a term just
    drops it. The total HyCoCLIP loss is hCC + gamma * hCE with gamma = 0.1 (the reference
    code's 0.2 * 0.5 * sum).

    Args:
        image, text, box_image, box_text: (B, D) space components; row i of each comes from
            the same sample.
        curv: positive c of the curvature -c.
        eta_inter: aperture threshold of the image-text terms (0.7 in the paper).
        eta_intra: aperture threshold of the box-whole terms (1.2 in the paper).
        terms: enabled term names (distinct, non-empty subset of `HCE_TERMS`).
    Returns:
        () loss.
    """
    check_terms(terms, HCE_TERMS)
    cones = {
        "t_i": (text, image, eta_inter),
        "tbox_ibox": (box_text, box_image, eta_inter),
        "ibox_i": (box_image, image, eta_intra),
        "tbox_t": (box_text, text, eta_intra),
    }
    losses = [
        entailment_loss(general, specific, curv, eta=eta)
        for general, specific, eta in (cones[t] for t in terms)
    ]
    return torch.stack(losses).sum()
