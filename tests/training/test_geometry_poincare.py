"""Poincaré-ball geometry (PoinCLIP) against independent oracles: geoopt's `PoincareBall` (the same c as ours:
curvature -c, ball of radius 1/sqrt(c)), PoinCLIP Eq. 2/5 in 50-digit mpmath (a dependency of torch, via sympy), the Lorentz model it is isometric to,
and cases worked by hand (tests/training/test_geometry.py: the Lorentz model and the oracles' conventions)."""

from __future__ import annotations

import math

import geoopt
import mpmath
import pytest
import torch

from helpers.geometry import CURVS, _grads, points
from hypvl.geometry import lorentz, poincare

# --------------------------------------------------------------------------- Poincaré


@pytest.mark.parametrize("c", CURVS)
def test_poincare_maps_and_distances_match_geoopt(c):
    ball = geoopt.PoincareBall(c=c)
    v, w = points(6, 4, 20, scale=0.4), points(5, 4, 21, scale=0.4)
    x, y = poincare.exp_map0(v, c), poincare.exp_map0(w, c)
    # geoopt's stereographic formulas agree to ~1e-7 relative, hence rtol=1e-6 against it
    torch.testing.assert_close(x, ball.expmap0(v), rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(poincare.log_map0(x, c), ball.logmap0(x), rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(poincare.log_map0(x, c), v, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(poincare.dist_to_origin(x, c), ball.dist0(x), rtol=1e-6, atol=1e-9)
    # the conformal factor at the origin is 2: a tangent vector v has Riemannian length 2|v|
    torch.testing.assert_close(poincare.dist_to_origin(x, c), 2 * v.norm(dim=-1), rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(poincare.mobius_add(x[:5], y, c), ball.mobius_add(x[:5], y, project=False), rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(poincare.pairwise_dist(x, y, c), ball.dist(x[:, None], y[None]), rtol=1e-6, atol=1e-9)
    # distance is symmetric and zero between a point and itself
    torch.testing.assert_close(poincare.pairwise_dist(x, x, c), poincare.pairwise_dist(x, x, c).T)
    torch.testing.assert_close(torch.diagonal(poincare.pairwise_dist(x, x, c)), torch.zeros(6, dtype=x.dtype), atol=1e-7, rtol=0)


def test_poincare_hand_worked_cases():
    # curvature -1: exp_map0 of (a, 0) is (tanh a, 0), at distance 2a from the origin
    a = 0.6
    x = poincare.exp_map0(torch.tensor([[a, 0.0]], dtype=torch.float64), 1.0)
    torch.testing.assert_close(x, torch.tensor([[math.tanh(a), 0.0]], dtype=torch.float64))
    torch.testing.assert_close(poincare.dist_to_origin(x, 1.0), torch.tensor([2 * a], dtype=torch.float64))
    # (-x) (+) x = 0, 0 (+) y = y
    torch.testing.assert_close(poincare.mobius_add(-x, x, 1.0), torch.zeros_like(x))
    y = torch.tensor([[0.1, -0.3]], dtype=torch.float64)
    torch.testing.assert_close(poincare.mobius_add(torch.zeros_like(y), y, 1.0), y)
    # the ball has radius 1/sqrt(c): huge tangent vectors land just inside it
    far = poincare.exp_map0(torch.tensor([[1e3, 0.0]]), 4.0)
    assert 0.49 < far.norm().item() < 0.5


@pytest.mark.parametrize("c", CURVS)
def test_lorentz_poincare_conversions_are_inverse_isometries(c):
    x, y = points(6, 3, 22, scale=2.0), points(6, 3, 23, scale=0.5)
    bx, by = poincare.lorentz_to_poincare(x, c), poincare.lorentz_to_poincare(y, c)
    assert (bx.norm(dim=-1) < 1 / math.sqrt(c)).all()
    torch.testing.assert_close(poincare.poincare_to_lorentz(bx, c), x, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(poincare.pairwise_dist(bx, by, c), lorentz.pairwise_dist(x, y, c), rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(poincare.dist_to_origin(bx, c), lorentz.dist_to_origin(x, c), rtol=1e-9, atol=1e-12)
    # the origin maps to the origin; the isometry's differential there halves tangent vectors
    # (Poincaré conformal factor 2 at the origin), so exp_0 commutes with it up to v -> v/2
    torch.testing.assert_close(poincare.lorentz_to_poincare(torch.zeros(1, 3, dtype=x.dtype), c), torch.zeros(1, 3, dtype=x.dtype))
    v = points(4, 3, 24)
    torch.testing.assert_close(poincare.lorentz_to_poincare(lorentz.exp_map0(v, c), c), poincare.exp_map0(v / 2, c), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_poincare_gradients_finite_at_origin_boundary_and_coincident_points(dtype):
    zero = torch.zeros(3, 4, dtype=dtype)
    huge = torch.full((3, 4), 1e3, dtype=dtype)
    y = poincare.exp_map0(torch.randn(3, 4, generator=torch.Generator().manual_seed(25), dtype=dtype), 1.0)
    functions = {
        "exp_map0": lambda v: poincare.exp_map0(v, 1.0),
        "log_map0": lambda v: poincare.log_map0(poincare.exp_map0(v, 1.0), 1.0),
        "dist_to_origin": lambda v: poincare.dist_to_origin(poincare.exp_map0(v, 1.0), 1.0),
        "pairwise_dist": lambda v: poincare.pairwise_dist(poincare.exp_map0(v, 1.0), y, 1.0),
        "dist_to_self": lambda v: poincare.pairwise_dist(poincare.exp_map0(v, 1.0), poincare.exp_map0(v, 1.0), 1.0),
        "to_lorentz": lambda v: poincare.poincare_to_lorentz(poincare.exp_map0(v, 1.0), 1.0),
        "to_poincare": lambda v: poincare.lorentz_to_poincare(v, 1.0),
    }
    for start_name, start in {"zero": zero, "huge": huge}.items():
        for name, fn in functions.items():
            assert torch.isfinite(_grads(fn, start)).all(), f"{name} at {start_name}"
    # at the origin the exp map's Jacobian is the identity (not zeroed by the eps clamp)
    torch.testing.assert_close(_grads(lambda v: poincare.exp_map0(v, 1.0)[:, 0], zero)[:, 0], torch.ones(3, dtype=dtype))


def mpmath_poincare_dist(x: torch.Tensor, y: torch.Tensor, c: float) -> torch.Tensor:
    """(2/sqrt(c)) artanh(sqrt(c) |(-x) (+)_c y|) for all pairs, in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    c_mp = mpmath.mpf(c)
    out = torch.empty(len(x), len(y), dtype=torch.float64)
    for i, xi in enumerate(x.tolist()):
        for j, yj in enumerate(y.tolist()):
            a = [-mpmath.mpf(v) for v in xi]
            b = [mpmath.mpf(v) for v in yj]
            ab = mpmath.fsum(p * q for p, q in zip(a, b))
            a2, b2 = mpmath.fsum(p * p for p in a), mpmath.fsum(q * q for q in b)
            denominator = 1 + 2 * c_mp * ab + c_mp**2 * a2 * b2
            diff = [((1 + 2 * c_mp * ab + c_mp * b2) * p + (1 - c_mp * a2) * q) / denominator for p, q in zip(a, b)]
            norm = mpmath.sqrt(mpmath.fsum(d * d for d in diff))
            out[i, j] = float(2 / mpmath.sqrt(c_mp) * mpmath.atanh(mpmath.sqrt(c_mp) * norm))
    return out


@pytest.mark.parametrize("c", [1.0, 2.5])
def test_poincare_near_boundary(c):
    x, y = poincare.exp_map0(points(6, 4, 26, scale=1.5), c), poincare.exp_map0(points(5, 4, 27, scale=1.5), c)
    assert (x.norm(dim=-1) * math.sqrt(c) > 0.95).any()
    # geoopt clamps its artanh there (distances saturate near 10.6), so the oracle is PoinCLIP
    # Eq. 2 (Möbius addition, Eq. 5) evaluated with 50-digit mpmath arithmetic
    torch.testing.assert_close(poincare.pairwise_dist(x, y, c), mpmath_poincare_dist(x, y, c), rtol=1e-8, atol=1e-9)
    # float32 keeps ~1e-3 relative accuracy even at 1e-5 from the boundary; self-distances stay ~0
    dist32 = poincare.pairwise_dist(x.float(), y.float(), c)
    torch.testing.assert_close(dist32.double(), poincare.pairwise_dist(x, y, c), rtol=1e-3, atol=1e-4)
    self32 = torch.diagonal(poincare.pairwise_dist(x.float(), x.float(), c))
    torch.testing.assert_close(self32, torch.zeros(6), atol=1e-6, rtol=0)
    # project caps norms at (1 - BOUNDARY_EPS) / sqrt(c) and leaves inner points alone
    outside = torch.tensor([[3.0, 4.0], [0.1, 0.0]], dtype=torch.float64)
    projected = poincare.project(outside, c)
    torch.testing.assert_close(projected.norm(dim=-1)[0].item(), (1 - poincare.BOUNDARY_EPS[torch.float64]) / math.sqrt(c))
    torch.testing.assert_close(projected[0] / projected[0].norm(), outside[0] / 5.0)
    torch.testing.assert_close(projected[1], outside[1])


def test_maps_at_origin_have_identity_jacobian_there():
    zero = torch.zeros(2, 3, dtype=torch.float64)
    for log_map in (lorentz.log_map0, poincare.log_map0, lorentz.exp_map0, poincare.exp_map0):
        jacobian = torch.autograd.functional.jacobian(lambda v: log_map(v, 1.0)[0], zero)[:, 0]
        torch.testing.assert_close(jacobian, torch.eye(3, dtype=torch.float64))


def test_literal_poinclip_exp_map_is_the_lorentz_exp_map_in_the_ball():
    # PoinCLIP's printed conformal factor gives tanh(sqrt(c)|v|/2) v / (sqrt(c)|v|), as the module says
    c, v = 0.7, points(5, 3, 28)
    rc = math.sqrt(c) * v.norm(dim=-1, keepdim=True)
    literal = torch.tanh(rc / 2) * v / rc
    torch.testing.assert_close(poincare.lorentz_to_poincare(lorentz.exp_map0(v, c), c), literal)


# --------------------------------------------------------------------------- Poincaré entailment cones


@pytest.mark.parametrize("c", CURVS)
def test_poincare_exterior_angle_matches_geoopt_log_maps(c):
    # the ball is conformal: the exterior angle at x is the Euclidean angle between the tangent
    # vectors log_x(y) and -log_x(0) (geoopt's general log map, not the closed form of Eq. 7)
    ball = geoopt.PoincareBall(c=c)
    x, y = poincare.exp_map0(points(8, 3, 30, scale=0.6), c), poincare.exp_map0(points(8, 3, 31, scale=0.6), c)
    to_y, away = ball.logmap(x, y), -ball.logmap(x, torch.zeros_like(x))
    expected = torch.arccos(torch.nn.functional.cosine_similarity(to_y, away, dim=-1))
    torch.testing.assert_close(poincare.oxy_angle(x, y, c), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("c", CURVS)
def test_poincare_cones_agree_with_the_lorentz_cones(c):
    # isometry to the hyperboloid: the exterior angle is intrinsic, and Ganea's aperture
    # K (1 - c|x|^2) / (sqrt(c)|x|) equals MERU's 2K / (sqrt(c)|x_L|) since |x_L| = 2|x| / (1 - c|x|^2)
    x, y = poincare.exp_map0(points(8, 4, 32, scale=0.8), c), poincare.exp_map0(points(8, 4, 33, scale=0.8), c)
    lx, ly = poincare.poincare_to_lorentz(x, c), poincare.poincare_to_lorentz(y, c)
    torch.testing.assert_close(poincare.oxy_angle(x, y, c), lorentz.oxy_angle(lx, ly, c), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(poincare.half_aperture(x, c), lorentz.half_aperture(lx, c), rtol=1e-6, atol=1e-6)


def test_poincare_cones_hand_worked():
    # c = 1, x = (0.5, 0), y = (0.5, 0.5): Eq. 7 gives (0.3125 - 0.375) / (0.5 * 0.5 * sqrt(0.625)) = -1/sqrt(10)
    x = torch.tensor([[0.5, 0.0]], dtype=torch.float64)
    y = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    torch.testing.assert_close(poincare.oxy_angle(x, y, 1.0), torch.tensor([math.acos(-1 / math.sqrt(10))], dtype=torch.float64))
    # Eq. 8 with K = 0.1: asin(0.1 * 0.75 / 0.5)
    torch.testing.assert_close(poincare.half_aperture(x, 1.0), torch.tensor([math.asin(0.15)], dtype=torch.float64))
    # a point further out on the ray through x is inside every cone (angle 0); one nearer the origin, opposite (pi)
    assert poincare.oxy_angle(x, 1.5 * x, 1.0).item() < 1e-3
    assert poincare.oxy_angle(x, 0.5 * x, 1.0).item() > math.pi - 1e-3
    # curvature c scales the ball by 1/sqrt(c) and leaves angles unchanged
    c = 4.0
    torch.testing.assert_close(poincare.oxy_angle(x / 2, y / 2, c), poincare.oxy_angle(x, y, 1.0))
    torch.testing.assert_close(poincare.half_aperture(x / 2, c), poincare.half_aperture(x, 1.0))
    # apexes nearer than Ganea's eps = 2K / (1 + sqrt(1 + 4K^2)) get the widest cone, ~pi/2
    near = torch.tensor([[0.05, 0.0]], dtype=torch.float64)
    assert abs(poincare.half_aperture(near, 1.0).item() - math.pi / 2) < 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_poincare_cone_gradients_finite_at_origin_and_coincident_points(dtype):
    zero = torch.zeros(3, 4, dtype=dtype)
    y = poincare.exp_map0(torch.randn(3, 4, generator=torch.Generator().manual_seed(34), dtype=dtype), 1.0)
    functions = {
        "half_aperture": lambda v: poincare.half_aperture(poincare.exp_map0(v, 1.0), 1.0),
        "oxy_angle": lambda v: poincare.oxy_angle(poincare.exp_map0(v, 1.0), y, 1.0),
        "oxy_angle_self": lambda v: poincare.oxy_angle(poincare.exp_map0(v, 1.0), poincare.exp_map0(v, 1.0), 1.0),
    }
    for start in (zero, torch.full((3, 4), 1e3, dtype=dtype), poincare.log_map0(y, 1.0)):
        for name, fn in functions.items():
            assert torch.isfinite(_grads(fn, start)).all(), name
