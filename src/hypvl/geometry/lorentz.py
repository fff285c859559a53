"""Lorentz (hyperboloid) model of hyperbolic space, in the MERU formulation.

Every function takes and returns the *space* components `x` of points on the upper sheet
of the hyperboloid `<p, p>_L = -1/curv`; the time component is recomputed on demand as
`x_time = sqrt(1/curv + ||x||^2)`. `curv` is the positive scalar c of the curvature -c
(a float or a 0-dim tensor, e.g. a learned `log_curv.exp()`). The origin has space
components 0.

Numerics follow facebookresearch/meru `meru/lorentz.py` (same clamps and eps); two
deliberate differences, both identical in exact arithmetic:
- clamps at `1 +- eps` use at least the dtype's machine epsilon (see `unit_margin`);
- the distance to the origin (and so `log_map0`) uses `asinh(sqrt(c)||x||)` instead of
  `acosh(sqrt(1 + c||x||^2))`: accurate near the origin, with finite gradients there.

All functions compute in float32 (float64 inputs stay float64), also under autocast.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from hypvl.geometry.precision import full_precision, unit_margin


@full_precision
def time_component(x: Tensor, curv: float | Tensor) -> Tensor:
    """Time component of points on the hyperboloid.

    Args:
        x: (..., D) space components.
        curv: positive c of the curvature -c.
    Returns:
        (...,) `sqrt(1/curv + ||x||^2)`.
    """
    return torch.sqrt(1 / curv + torch.sum(x**2, dim=-1))


@full_precision
def pairwise_inner(x: Tensor, y: Tensor, curv: float | Tensor) -> Tensor:
    """Lorentzian inner product `<x, y>_L = <x, y> - x_time * y_time` of all pairs.

    Args:
        x: (B1, D) space components.
        y: (B2, D) space components.
        curv: positive c of the curvature -c.
    Returns:
        (B1, B2) inner products (all <= -1/curv).
    """
    return x @ y.T - torch.outer(time_component(x, curv), time_component(y, curv))


def _distance_from_cosh(cosh_rc_dist: Tensor, curv: float | Tensor, eps: float) -> Tensor:
    """Geodesic distance `acosh(z) / sqrt(curv)` from `z = -curv * <x, y>_L`, clamped at 1."""
    margin = unit_margin(eps, cosh_rc_dist.dtype)
    return torch.acosh(torch.clamp(cosh_rc_dist, min=1 + margin)) / curv**0.5


@full_precision
def pairwise_dist(x: Tensor, y: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Geodesic distance of all pairs, `acosh(-curv <x, y>_L) / sqrt(curv)`.

    Args:
        x: (B1, D) space components.
        y: (B2, D) space components.
        curv: positive c of the curvature -c.
        eps: the acosh input is clamped to at least `1 + eps`.
    Returns:
        (B1, B2) distances.
    """
    return _distance_from_cosh(-curv * pairwise_inner(x, y, curv), curv, eps)


@full_precision
def elementwise_dist(x: Tensor, y: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Geodesic distance between matching rows of `x` and `y` (the diagonal of `pairwise_dist`).

    Args:
        x: (B, D) space components.
        y: (B, D) space components.
        curv: positive c of the curvature -c.
        eps: the acosh input is clamped to at least `1 + eps`.
    Returns:
        (B,) distances `d(x[i], y[i])`.
    """
    inner = torch.sum(x * y, dim=-1) - time_component(x, curv) * time_component(y, curv)
    return _distance_from_cosh(-curv * inner, curv, eps)


@full_precision
def dist_to_origin(x: Tensor, curv: float | Tensor) -> Tensor:
    """Geodesic distance from the origin, `asinh(sqrt(curv) ||x||) / sqrt(curv)`.

    Args:
        x: (..., D) space components.
        curv: positive c of the curvature -c.
    Returns:
        (...,) distances.
    """
    return torch.asinh(curv**0.5 * torch.linalg.vector_norm(x, dim=-1)) / curv**0.5


@full_precision
def exp_map0(x: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Exponential map at the origin: tangent vectors (Euclidean) onto the hyperboloid.

    `sinh(sqrt(c)||x||) * x / (sqrt(c)||x||)` (MERU Eq. 9, HyCoCLIP Eq. 4 at the origin).
    The sinh input is clamped to [eps, asinh(2**15)], so outputs have norm <= 2**15/sqrt(c).

    Args:
        x: (..., D) tangent vectors at the origin.
        curv: positive c of the curvature -c.
        eps: lower clamp of `sqrt(c)||x||`, avoids division by zero.
    Returns:
        (..., D) space components of the mapped points.
    """
    rc_norm = curv**0.5 * torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    sinh_input = torch.clamp(rc_norm, min=eps, max=math.asinh(2**15))
    return torch.sinh(sinh_input) * x / torch.clamp(rc_norm, min=eps)


@full_precision
def log_map0(x: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Logarithmic map at the origin, the inverse of `exp_map0`.

    `asinh(sqrt(c)||x||) * x / (sqrt(c)||x||)`: a tangent vector whose norm is the
    geodesic distance of `x` from the origin.

    Args:
        x: (..., D) space components.
        curv: positive c of the curvature -c.
        eps: lower clamp of `sqrt(c)||x||` (asinh input and divisor, so the Jacobian at
            the origin is the identity).
    Returns:
        (..., D) tangent vectors at the origin.
    """
    rc_norm = torch.clamp(curv**0.5 * torch.linalg.vector_norm(x, dim=-1, keepdim=True), min=eps)
    return torch.asinh(rc_norm) * x / rc_norm


@full_precision
def half_aperture(
    x: Tensor, curv: float | Tensor, min_radius: float = 0.1, eps: float = 1e-8
) -> Tensor:
    """Half-aperture of the entailment cone with apex `x`: `asin(2K / (sqrt(c)||x||))`.

    MERU Eq. 10 / HyCoCLIP Eq. 7 with K = `min_radius`. Points closer to the origin than
    that radius get the widest cone (asin input clamped to +-(1 - eps), i.e. ~pi/2).

    Args:
        x: (B, D) space components of the cone apexes.
        curv: positive c of the curvature -c.
        min_radius: the constant K (0.1 in MERU and HyCoCLIP).
        eps: added to the denominator; margin of the asin clamp.
    Returns:
        (B,) half-apertures in (0, pi/2).
    """
    asin_input = 2 * min_radius / (torch.linalg.vector_norm(x, dim=-1) * curv**0.5 + eps)
    margin = unit_margin(eps, asin_input.dtype)
    return torch.asin(torch.clamp(asin_input, min=-1 + margin, max=1 - margin))


@full_precision
def oxy_angle(x: Tensor, y: Tensor, curv: float | Tensor, eps: float = 1e-8) -> Tensor:
    """Exterior angle at `x` of the hyperbolic triangle (origin O, x, y): pi - angle Oxy.

    `x` is the general concept (cone apex), `y` the specific one; `y` lies in the
    entailment cone of `x` when this angle is below `half_aperture(x)`. MERU Eq. 11 /
    HyCoCLIP Eq. 9 (there written phi(p=y, q=x)):
    `acos((y_time + x_time c<x,y>_L) / (||x|| sqrt((c<x,y>_L)^2 - 1)))`.

    Args:
        x: (B, D) space components of the apexes.
        y: (B, D) space components of the points tested against the cones.
        curv: positive c of the curvature -c.
        eps: lower clamp of `(c<x,y>_L)^2 - 1`, added to the denominator, margin of the
            acos clamp.
    Returns:
        (B,) angles in (0, pi).
    """
    x_time = time_component(x, curv)
    y_time = time_component(y, curv)
    c_inner = curv * (torch.sum(x * y, dim=-1) - x_time * y_time)
    numerator = y_time + c_inner * x_time
    denominator = torch.linalg.vector_norm(x, dim=-1) * torch.sqrt(
        torch.clamp(c_inner**2 - 1, min=eps)
    )
    acos_input = numerator / (denominator + eps)
    margin = unit_margin(eps, acos_input.dtype)
    return torch.acos(torch.clamp(acos_input, min=-1 + margin, max=1 - margin))
