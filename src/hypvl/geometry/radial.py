"""Radial Embedding geometry in Euclidean space (HierarCaps paper, Sec. 3-4; Ganea et al.'s Euclidean cones).

Every function is differentiable (fine-tuning uses them as losses) and broadcasts over leading dimensions; `root`
is a (D,) point (the empty-string embedding, or a fixed root such as the origin). e is the *general* item, e' the
specific one: Xi_r(e, e') is small when e' lies on the ray from r through e, beyond e.
"""

import torch
from torch import Tensor


def radius(x: Tensor, root: Tensor) -> Tensor:
    """d_r(x) = ||x - r||: (..., D) -> (...)."""
    return torch.linalg.vector_norm(x - root, dim=-1)


def exterior_angle(general: Tensor, specific: Tensor, root: Tensor, eps: float = 0.0) -> Tensor:
    """Xi_r(e, e') = pi - angle(r, e, e') = arccos(cos(e - r, e' - e)) in [0, pi]: (..., D) x 2 -> (...).

    eps keeps the cosine inside [-1 + eps, 1 - eps], where arccos has a finite gradient (training); 0 for scores.
    """
    cosine = torch.nn.functional.cosine_similarity(general - root, specific - general, dim=-1)
    return torch.arccos(cosine.clamp(-1.0 + eps, 1.0 - eps))


def half_aperture(x: Tensor, root: Tensor, epsilon: float, eps: float = 1e-8) -> Tensor:
    """Half-aperture of the Euclidean entailment cone at x: theta with sin(theta) = min(1, epsilon / d_r(x))
    (HierarCaps Sec. 6.3, App. C.5): (..., D) -> (...) in (0, pi/2]."""
    return torch.arcsin((epsilon / radius(x, root).clamp(min=eps)).clamp(max=1.0))
