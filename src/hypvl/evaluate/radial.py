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
from hypvl.evaluate.metrics import check_finite
from hypvl.geometry import lorentz, poincare, radial

# a hyperbolic model's `geometry` -> the module of its space (both give dist_to_origin and oxy_angle)
HYPERBOLIC = {"lorentz": lorentz, "poincare": poincare}


def entailment_root(model, tokenizer) -> torch.Tensor | None:
    """(D,) root of a Euclidean model: the one its radial fine-tuning fixed or learned (`radial_root`, set by
    `load_checkpoint`) where there is one, else the empty-string text embedding; None (the origin) for hyperbolic
    models."""
    if model.geometry in HYPERBOLIC:
        return None
    stored = getattr(model, "radial_root", None)
    if stored is not None:
        return stored
    return text_embeddings(model, tokenizer, [""], 1, "empty-string root")[0]


def radii(model, embeddings: torch.Tensor, root: torch.Tensor | None) -> torch.Tensor:
    """(N,) distance of each embedding from the root (Euclidean d_r, or hyperbolic distance to the origin)."""
    if root is None:
        out = HYPERBOLIC[model.geometry].dist_to_origin(embeddings, model.curvature)
    else:
        out = radial.radius(embeddings, root)
    check_finite("radii", out)
    return out


def exterior_angles(model, general: torch.Tensor, specific: torch.Tensor, root: torch.Tensor | None) -> torch.Tensor:
    """(N,) Xi_r(general[i], specific[i]) in [0, pi]."""
    if root is None:
        out = HYPERBOLIC[model.geometry].oxy_angle(general, specific, model.curvature)
    else:
        out = radial.exterior_angle(general, specific, root)
    check_finite("exterior angles", out)
    return out


def pairwise_exterior_angles(model, general: torch.Tensor, specific: torch.Tensor,
                             root: torch.Tensor | None) -> torch.Tensor:
    """(A, B) Xi_r(general[a], specific[b])."""
    a, b = len(general), len(specific)
    flat = exterior_angles(model, general.repeat_interleave(b, dim=0), specific.repeat(a, 1), root)
    return flat.view(a, b)
