"""Poincaré ball model of hyperbolic space (PoinCLIP), with conversions to the Lorentz model.

`curv` is the positive c of the curvature -c (a float or a 0-dim tensor); the ball has
radius 1/sqrt(c) and its origin is 0. Formulas are the standard ones (Ganea et al. 2018,
as in geoopt's `PoincareBall`). PoinCLIP prints the conformal factor as 1/(1 - ||x||^2)
instead of 2/(1 - c||x||^2); `exp_map0` here is the standard `tanh(sqrt(c)||v||) v /
(sqrt(c)||v||)` (distance 2||v|| from the origin). The literal reading,
`tanh(sqrt(c)||v||/2) v / (sqrt(c)||v||)` (distance ||v||, as MERU's Lorentz exp map), equals
`lorentz_to_poincare(lorentz.exp_map0(v, c), c)`.

Boundary handling (the paper gives none): `exp_map0` and `project` keep points at most
`(1 - BOUNDARY_EPS[dtype]) / sqrt(c)` from the origin (geoopt's margins), and artanh inputs
are clamped below 1. All functions compute in float32 (float64 stays float64), also under
autocast.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hypvl.geometry.lorentz import time_component
from hypvl.geometry.precision import full_precision, unit_margin

BOUNDARY_EPS = {torch.float32: 4e-3, torch.float64: 1e-5}


def _artanh_below_one(z: Tensor, eps: float) -> Tensor:
    """artanh of `z` >= 0 clamped to at most `1 - unit_margin(eps)`."""
    return torch.atanh(torch.clamp(z, max=1 - unit_margin(eps, z.dtype)))


@full_precision
def project(x: Tensor, curv: float | Tensor) -> Tensor:
    """Pull points back inside the ball: norms are capped at `(1 - BOUNDARY_EPS) / sqrt(c)`.

    Args:
        x: (..., D) points.
        curv: positive c of the curvature -c.
    Returns:
        (..., D) points, unchanged where already inside the cap.
    """
    max_norm = (1 - BOUNDARY_EPS[x.dtype]) / curv**0.5
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp(min=1e-15)
    return torch.where(norm > max_norm, x / norm * max_norm, x)


@full_precision
def mobius_add(x: Tensor, y: Tensor, curv: float | Tensor, eps: float = 1e-15) -> Tensor:
    """Möbius addition `x (+)_c y` (PoinCLIP Eq. 5 with K = -c).

    `((1 + 2c<x,y> + c|y|^2) x + (1 - c|x|^2) y) / (1 + 2c<x,y> + c^2 |x|^2 |y|^2)`.

    Args:
        x: (..., D) points (broadcast against `y`).
        y: (..., D) points.
        curv: positive c of the curvature -c.
        eps: lower clamp of the denominator.
    Returns:
        (..., D) sums.
    """
    xy = torch.sum(x * y, dim=-1, keepdim=True)
    x2 = torch.sum(x * x, dim=-1, keepdim=True)
    y2 = torch.sum(y * y, dim=-1, keepdim=True)
    numerator = (1 + 2 * curv * xy + curv * y2) * x + (1 - curv * x2) * y
    denominator = 1 + 2 * curv * xy + curv**2 * x2 * y2
    return numerator / denominator.clamp(min=eps)


@full_precision
def exp_map0(v: Tensor, curv: float | Tensor, eps: float = 1e-15) -> Tensor:
    """Exponential map at the origin: `tanh(sqrt(c)||v||) v / (sqrt(c)||v||)`, then `project`.

    Args:
        v: (..., D) tangent vectors at the origin (Euclidean features).
        curv: positive c of the curvature -c.
        eps: lower clamp of `sqrt(c)||v||` (tanh input and divisor, so the Jacobian at the
            origin is the identity).
    Returns:
        (..., D) points in the ball, at distance `2||v||` from the origin (the conformal
        factor at the origin is 2).
    """
    rc_norm = (curv**0.5 * torch.linalg.vector_norm(v, dim=-1, keepdim=True)).clamp(min=eps)
    return project(torch.tanh(rc_norm) * v / rc_norm, curv)


@full_precision
def log_map0(x: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Logarithmic map at the origin, the inverse of `exp_map0`: `artanh(sqrt(c)||x||) x / (sqrt(c)||x||)`.

    Args:
        x: (..., D) points in the ball.
        curv: positive c of the curvature -c.
        eps: lower clamp of `sqrt(c)||x||` (artanh input and divisor, so the Jacobian at
            the origin is the identity); margin of the artanh clamp below 1.
    Returns:
        (..., D) tangent vectors at the origin, of norm `dist_to_origin(x) / 2`.
    """
    rc_norm = (curv**0.5 * torch.linalg.vector_norm(x, dim=-1, keepdim=True)).clamp(min=eps)
    return _artanh_below_one(rc_norm, eps) * x / rc_norm


@full_precision
def dist_to_origin(x: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Geodesic distance from the origin, `2 artanh(sqrt(c)||x||) / sqrt(c)`.

    Args:
        x: (..., D) points in the ball.
        curv: positive c of the curvature -c.
        eps: margin of the artanh clamp.
    Returns:
        (...,) distances.
    """
    rc_norm = curv**0.5 * torch.linalg.vector_norm(x, dim=-1)
    return 2 * _artanh_below_one(rc_norm, eps) / curv**0.5


@full_precision
def pairwise_dist(x: Tensor, y: Tensor, curv: float | Tensor, eps: float = 1e-15) -> Tensor:
    """Geodesic distance of all pairs (PoinCLIP Eq. 2).

    Computed with the equivalent closed form
    `2/sqrt(c) * asinh(sqrt(c)||x - y|| / sqrt((1 - c||x||^2)(1 - c||y||^2)))`, which equals
    `2/sqrt(c) * artanh(sqrt(c)||(-x) (+)_c y||)` but needs no (B1, B2, D) Möbius sums, stays
    accurate for nearby points and has finite gradients at coincident ones.

    Args:
        x: (B1, D) points in the ball.
        y: (B2, D) points in the ball.
        curv: positive c of the curvature -c.
        eps: lower clamp of `1 - c||.||^2`.
    Returns:
        (B1, B2) distances.
    """
    euclidean = torch.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist")
    x_factor = (1 - curv * torch.sum(x * x, dim=-1, keepdim=True)).clamp(min=eps)
    y_factor = (1 - curv * torch.sum(y * y, dim=-1, keepdim=True)).clamp(min=eps)
    ratio = curv**0.5 * euclidean / torch.sqrt(x_factor * y_factor.T)
    return 2 * torch.asinh(ratio) / curv**0.5


@full_precision
def lorentz_to_poincare(x: Tensor, curv: float | Tensor) -> Tensor:
    """Isometry from the hyperboloid to the ball: `x_space / (1 + sqrt(c) x_time)`.

    Args:
        x: (..., D) Lorentz space components (curvature -c).
        curv: positive c of the curvature -c.
    Returns:
        (..., D) points in the ball of radius 1/sqrt(c).
    """
    return x / (1 + curv**0.5 * time_component(x, curv).unsqueeze(-1))


@full_precision
def poincare_to_lorentz(x: Tensor, curv: float | Tensor, eps: float = 1e-15) -> Tensor:
    """Isometry from the ball to the hyperboloid: `2 x / (1 - c||x||^2)` (MERU Eq. 14).

    Args:
        x: (..., D) points in the ball of radius 1/sqrt(c).
        curv: positive c of the curvature -c.
        eps: lower clamp of `1 - c||x||^2`.
    Returns:
        (..., D) Lorentz space components.
    """
    return 2 * x / (1 - curv * torch.sum(x * x, dim=-1, keepdim=True)).clamp(min=eps)


@full_precision
def half_aperture(x: Tensor, curv: float | Tensor, min_radius: float = 0.1, eps: float = 1e-8) -> Tensor:
    """Half-aperture of the entailment cone with apex `x`: `asin(K (1 - c||x||^2) / (sqrt(c)||x||))`.

    PoinCLIP Eq. 8 / Ganea et al. 2018 Eq. 27 (there for c = 1), with K = `min_radius`; the
    general-c form follows by scaling the ball to radius 1 (angles are unchanged). It equals
    `lorentz.half_aperture` of the same point mapped to the hyperboloid. Apexes nearer the origin
    than `2K / (1 + sqrt(1 + 4K^2)) / sqrt(c)` get the widest cone (asin input clamped to
    `1 - eps`, i.e. ~pi/2).

    Args:
        x: (B, D) cone apexes in the ball.
        curv: positive c of the curvature -c.
        min_radius: the cone constant K (Ganea's 0.1; PoinCLIP does not state it).
        eps: added to the denominator; margin of the asin clamp.
    Returns:
        (B,) half-apertures in (0, pi/2).
    """
    norm = torch.linalg.vector_norm(x, dim=-1)
    asin_input = min_radius * (1 - curv * norm**2) / (curv**0.5 * norm + eps)
    margin = unit_margin(eps, asin_input.dtype)
    return torch.asin(torch.clamp(asin_input, min=-1 + margin, max=1 - margin))


@full_precision
def oxy_angle(x: Tensor, y: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Exterior angle at `x` of the hyperbolic triangle (origin O, x, y): pi - angle Oxy.

    PoinCLIP Eq. 7 / Ganea et al. 2018 Eq. 28 (there for c = 1), in general c:
    `acos((<x,y>(1 + c||x||^2) - ||x||^2 (1 + c||y||^2)) /
          (||x|| ||x - y|| sqrt(1 + c^2 ||x||^2 ||y||^2 - 2c<x,y>)))`.
    `y` lies in the entailment cone of `x` when this is below `half_aperture(x)`; it equals
    `lorentz.oxy_angle` of the points mapped to the hyperboloid.

    Args:
        x: (B, D) apexes in the ball.
        y: (B, D) points tested against the cones.
        curv: positive c of the curvature -c.
        eps: added to the denominator; margin of the acos clamp.
    Returns:
        (B,) angles in (0, pi).
    """
    xy = torch.sum(x * y, dim=-1)
    x2 = torch.sum(x * x, dim=-1)
    y2 = torch.sum(y * y, dim=-1)
    numerator = xy * (1 + curv * x2) - x2 * (1 + curv * y2)
    root = torch.sqrt(torch.clamp(1 + curv**2 * x2 * y2 - 2 * curv * xy, min=eps))
    denominator = torch.linalg.vector_norm(x, dim=-1) * torch.linalg.vector_norm(x - y, dim=-1) * root
    acos_input = numerator / (denominator + eps)
    margin = unit_margin(eps, acos_input.dtype)
    return torch.acos(torch.clamp(acos_input, min=-1 + margin, max=1 - margin))
