"""Radial Embedding geometry (HierarCaps paper, Sec. 3-4) for every method: root, radius, exterior angle.

Euclidean models (CLIP): the root r is the embedding of the empty string, the radius is d_r(e) =
||e - r|| and the entailment score is the exterior angle Xi_r(e, e') = arccos(cos(e - r, e' - e)),
e the general item. Hyperbolic models (MERU, HyCoCLIP on the hyperboloid, PoinCLIP in the Poincaré ball): the
root is the origin, the radius the geodesic distance to it, and Xi is the exterior angle of the triangle
(O, e, e') (`lorentz.oxy_angle`, `poincare.oxy_angle`). Smaller Xi means e' lies closer to the ray from the
root through e.
"""

import torch

from hypvl.evaluate.features import text_embeddings
from hypvl.evaluate.metrics.checks import check_finite


def entailment_root(model, tokenizer) -> torch.Tensor | None:
    """(D,) the root of `model` (`DualEncoder.entailment_root`: a Euclidean model's fixed or learned root, else its
    empty-string text embedding); None (the origin) for hyperbolic models."""
    return model.entailment_root(lambda: text_embeddings(model, tokenizer, [""], 1, "empty-string root")[0])


def radii(model, embeddings: torch.Tensor, root: torch.Tensor | None) -> torch.Tensor:
    """(N,) distance of each embedding from the root, in the model's geometry (`DualEncoder.radius`)."""
    out = model.radius(embeddings, root)
    check_finite("radii", out)
    return out


def exterior_angles(model, general: torch.Tensor, specific: torch.Tensor, root: torch.Tensor | None) -> torch.Tensor:
    """(N,) Xi_r(general[i], specific[i]) in [0, pi], in the model's geometry (`DualEncoder.exterior_angle`)."""
    out = model.exterior_angle(general, specific, root)
    check_finite("exterior angles", out)
    return out


def pairwise_exterior_angles(model, general: torch.Tensor, specific: torch.Tensor,
                             root: torch.Tensor | None) -> torch.Tensor:
    """(A, B) Xi_r(general[a], specific[b])."""
    a, b = len(general), len(specific)
    flat = exterior_angles(model, general.repeat_interleave(b, dim=0), specific.repeat(a, 1), root)
    return flat.view(a, b)
