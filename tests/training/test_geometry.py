"""Lorentz-model geometry against independent oracles (the Poincaré ball: tests/training/test_geometry_poincare.py).

Oracles: full-coordinate formulas written out here in numpy float64 (Minkowski inner
product, acosh distance, HyCoCLIP Eq. 4 exp map at the origin, hyperbolic law of cosines),
geoopt's `Lorentz`, and cases worked by hand.

geoopt conventions (checked against geoopt 0.5.1 source): `geoopt.Lorentz(k)` stores FULL
coordinates `[time, space...]` with `<p, p>_L = -k`, i.e. curvature -1/k; our `curv` c (curvature
-c, space components only) therefore corresponds to `k = 1/c`, and a point x of ours is
`[sqrt(1/c + |x|^2), x]` there. `geoopt.PoincareBall(c)` uses the same c as ours
(curvature -c, ball of radius 1/sqrt(c)).
"""

from __future__ import annotations

import math

import geoopt
import numpy as np
import pytest
import torch

from helpers.geometry import CURVS, _grads, points
from hypvl.geometry import lorentz, poincare


def lift(x: np.ndarray, c: float) -> np.ndarray:
    """Full hyperboloid coordinates [time, space] of space components x (..., D)."""
    time = np.sqrt(1 / c + np.sum(x**2, axis=-1, keepdims=True))
    return np.concatenate([time, x], axis=-1)


def minkowski(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """<p, q>_L = -p0 q0 + <p~, q~> (HyCoCLIP Eq. 2) over the last axis."""
    return -p[..., 0] * q[..., 0] + np.sum(p[..., 1:] * q[..., 1:], axis=-1)


def full_dist(p: np.ndarray, q: np.ndarray, c: float) -> np.ndarray:
    """HyCoCLIP Eq. 3 in full coordinates."""
    return np.arccosh(np.maximum(-c * minkowski(p, q), 1.0)) / np.sqrt(c)


def full_exp0(u: np.ndarray, c: float) -> np.ndarray:
    """HyCoCLIP Eq. 4 at the origin O = (1/sqrt(c), 0...) for tangent v = (0, u)."""
    origin = np.zeros(u.shape[-1] + 1)
    origin[0] = 1 / np.sqrt(c)
    v = np.concatenate([np.zeros(u.shape[:-1] + (1,)), u], axis=-1)
    norm_l = np.sqrt(np.maximum(minkowski(v, v), 0.0))[..., None]
    return np.cosh(np.sqrt(c) * norm_l) * origin + np.sinh(np.sqrt(c) * norm_l) / (
        np.sqrt(c) * norm_l
    ) * v


# --------------------------------------------------------------------------- Lorentz


@pytest.mark.parametrize("c", CURVS)
def test_pairwise_inner_and_dist_match_full_coordinates(c):
    x, y = points(5, 4, 0), points(3, 4, 1, scale=2.0)
    px, py = lift(x.numpy(), c), lift(y.numpy(), c)
    inner = minkowski(px[:, None], py[None])
    np.testing.assert_allclose(lorentz.pairwise_inner(x, y, c).numpy(), inner, rtol=1e-10)
    np.testing.assert_allclose(lorentz.pairwise_dist(x, y, c).numpy(), full_dist(px[:, None], py[None], c), rtol=1e-9)
    np.testing.assert_allclose(lorentz.time_component(x, c).numpy(), px[:, 0], rtol=1e-12)
    # the lifted points lie on the hyperboloid <p, p>_L = -1/c
    np.testing.assert_allclose(minkowski(px, px), -1 / c, rtol=1e-9)


@pytest.mark.parametrize("c", CURVS)
def test_distances_match_geoopt(c):
    manifold = geoopt.Lorentz(k=1 / c)
    x, y = points(6, 3, 2), points(6, 3, 3, scale=3.0)
    px, py = torch.from_numpy(lift(x.numpy(), c)), torch.from_numpy(lift(y.numpy(), c))
    expected = manifold.dist(px, py)
    torch.testing.assert_close(lorentz.elementwise_dist(x, y, c), expected, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(torch.diagonal(lorentz.pairwise_dist(x, y, c)), expected, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(lorentz.dist_to_origin(y, c), manifold.dist0(py), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("c", CURVS)
def test_exp_map0_matches_eq4_and_geoopt(c):
    u = points(7, 5, 4, scale=1.5)
    mapped = lorentz.exp_map0(u, c)
    np.testing.assert_allclose(mapped.numpy(), full_exp0(u.numpy(), c)[:, 1:], rtol=1e-9)
    tangent = torch.cat([torch.zeros(7, 1, dtype=u.dtype), u], dim=-1)
    geo = geoopt.Lorentz(k=1 / c).expmap0(tangent)
    torch.testing.assert_close(mapped, geo[:, 1:], rtol=1e-7, atol=1e-9)
    # geoopt's time component agrees with ours, i.e. the point lies on our hyperboloid
    torch.testing.assert_close(lorentz.time_component(mapped, c), geo[:, 0], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("c", CURVS)
def test_log_map0_inverts_exp_map0_and_matches_geoopt(c):
    u = points(7, 5, 5, scale=1.5)
    x = lorentz.exp_map0(u, c)
    torch.testing.assert_close(lorentz.log_map0(x, c), u, rtol=1e-9, atol=1e-12)
    geo = geoopt.Lorentz(k=1 / c).logmap0(torch.from_numpy(lift(x.numpy(), c)))
    torch.testing.assert_close(lorentz.log_map0(x, c), geo[:, 1:], rtol=1e-6, atol=1e-9)
    # distance from the origin is the norm of the log map
    torch.testing.assert_close(lorentz.dist_to_origin(x, c), u.norm(dim=-1), rtol=1e-9, atol=1e-12)


def test_hand_worked_cases():
    a = 1.3
    mapped = lorentz.exp_map0(torch.tensor([[a, 0.0]], dtype=torch.float64), 1.0)
    torch.testing.assert_close(mapped, torch.tensor([[math.sinh(a), 0.0]], dtype=torch.float64))
    # at curvature -4 the time component of the origin is 1/2, and exp_map0 of (a, 0) is (sinh(2a)/2, 0)
    mapped = lorentz.exp_map0(torch.tensor([[a, 0.0]], dtype=torch.float64), 4.0)
    torch.testing.assert_close(mapped, torch.tensor([[math.sinh(2 * a) / 2, 0.0]], dtype=torch.float64))
    # origin to (sinh 1, 0) at curvature -1 is distance 1
    point = torch.tensor([[math.sinh(1.0), 0.0]], dtype=torch.float64)
    torch.testing.assert_close(lorentz.dist_to_origin(point, 1.0), torch.tensor([1.0], dtype=torch.float64))
    torch.testing.assert_close(
        lorentz.pairwise_dist(point, torch.zeros(1, 2, dtype=torch.float64), 1.0),
        torch.tensor([[1.0]], dtype=torch.float64),
    )
    # two points at distance a on opposite sides of the origin are 2a apart
    left, right = torch.tensor([[-math.sinh(a), 0.0]]), torch.tensor([[math.sinh(a), 0.0]])
    torch.testing.assert_close(lorentz.elementwise_dist(left, right, 1.0), torch.tensor([2 * a]))


@pytest.mark.parametrize("c", [1.0, 0.5])
def test_half_aperture_hand_worked(c):
    radii = torch.tensor([0.5, 1.0, 4.0, 30.0], dtype=torch.float64)
    x = torch.stack([radii, torch.zeros_like(radii)], dim=-1)
    expected = torch.asin(0.2 / (radii * math.sqrt(c)))
    torch.testing.assert_close(lorentz.half_aperture(x, c), expected, rtol=1e-6, atol=1e-9)
    # inside the min_radius neighbourhood (and at the origin itself) the cone is widest, ~pi/2
    near = torch.tensor([[0.05, 0.0], [0.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(lorentz.half_aperture(near, c), torch.full((2,), math.pi / 2), atol=2e-4, rtol=0, check_dtype=False)
    # a larger K widens the cone: asin(2K/r)
    torch.testing.assert_close(lorentz.half_aperture(x[2:], c, min_radius=0.5), torch.asin(1.0 / (radii[2:] * math.sqrt(c))))


def law_of_cosines_exterior_angle(x: np.ndarray, y: np.ndarray, c: float) -> np.ndarray:
    """pi - angle Oxy from the three side lengths (hyperbolic law of cosines, curvature -c)."""
    origin = lift(np.zeros_like(x), c)
    px, py = lift(x, c), lift(y, c)
    a, b, o = full_dist(origin, px, c), full_dist(px, py, c), full_dist(origin, py, c)
    r = np.sqrt(c)
    cos_oxy = (np.cosh(r * a) * np.cosh(r * b) - np.cosh(r * o)) / (np.sinh(r * a) * np.sinh(r * b))
    return np.pi - np.arccos(cos_oxy)


@pytest.mark.parametrize("c", CURVS)
def test_oxy_angle_matches_law_of_cosines(c):
    x, y = points(8, 4, 6), points(8, 4, 7, scale=2.0)
    expected = law_of_cosines_exterior_angle(x.numpy(), y.numpy(), c)
    np.testing.assert_allclose(lorentz.oxy_angle(x, y, c).numpy(), expected, rtol=1e-6, atol=1e-7)


def cone_point(apex: torch.Tensor, theta: float, length: float, c: float, seed: int) -> torch.Tensor:
    """Space components of exp_apex(length * w), w a unit tangent at the apex that makes the
    angle theta with the outward geodesic direction (continuing origin -> apex); built with
    geoopt's full-coordinate logmap/expmap, so the exterior angle at the apex is theta."""
    manifold = geoopt.Lorentz(k=1 / c)
    p = torch.from_numpy(lift(apex.numpy(), c))
    origin = torch.from_numpy(lift(np.zeros_like(apex.numpy()), c))
    outward = -manifold.logmap(p, origin)
    outward = outward / manifold.norm(outward, keepdim=True)
    other = manifold.proju(p, torch.randn(p.shape, generator=torch.Generator().manual_seed(seed), dtype=p.dtype))
    other = other - manifold.inner(p, other, outward, keepdim=True) * outward
    other = other / manifold.norm(other, keepdim=True)
    direction = math.cos(theta) * outward + math.sin(theta) * other
    return manifold.expmap(p, length * direction)[..., 1:]


@pytest.mark.parametrize("c", CURVS)
@pytest.mark.parametrize("theta", [0.05, 0.4, 1.2, 2.5])
def test_oxy_angle_recovers_constructed_exterior_angle(c, theta):
    apex = points(4, 3, 8, scale=1.5)
    y = cone_point(apex, theta, length=0.8, c=c, seed=9)
    torch.testing.assert_close(lorentz.oxy_angle(apex, y, c), torch.full((4,), theta, dtype=torch.float64), rtol=1e-6, atol=1e-6)


def test_float32_under_bfloat16_autocast():
    x32, y32 = points(16, 64, 10, 0.3).float(), points(12, 64, 11, 0.3).float()
    reference = lorentz.pairwise_dist(x32.double(), y32.double(), 1.0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.matmul(x32, y32.T).dtype == torch.bfloat16  # autocast is active
        outputs = {
            "pairwise_dist": lorentz.pairwise_dist(x32, y32, 1.0),
            "pairwise_dist_bf16_inputs": lorentz.pairwise_dist(x32.bfloat16(), y32.bfloat16(), 1.0),
            "pairwise_inner": lorentz.pairwise_inner(x32, y32, 1.0),
            "elementwise_dist": lorentz.elementwise_dist(x32[:12], y32, 1.0),
            "exp_map0": lorentz.exp_map0(x32.bfloat16(), 1.0),
            "log_map0": lorentz.log_map0(x32, 1.0),
            "half_aperture": lorentz.half_aperture(x32, 1.0),
            "oxy_angle": lorentz.oxy_angle(x32[:12], y32, 1.0),
            "dist_to_origin": lorentz.dist_to_origin(x32, 1.0),
            "time_component": lorentz.time_component(x32.bfloat16(), 1.0),
            "poincare_dist": poincare.pairwise_dist(x32 * 0.1, y32 * 0.1, 1.0),
        }
        # the float32 matmul inside is not done in bfloat16 (that would err by ~1e-2)
        torch.testing.assert_close(outputs["pairwise_dist"].double(), reference, rtol=1e-5, atol=1e-5)
    for name, value in outputs.items():
        assert value.dtype == torch.float32, name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_finite_at_origin_huge_norms_and_coincident_points(dtype):
    zero = torch.zeros(3, 4, dtype=dtype)
    huge = torch.full((3, 4), 1e4, dtype=dtype)
    y = torch.randn(3, 4, generator=torch.Generator().manual_seed(12), dtype=dtype)
    functions = {
        "exp_map0": lambda x: lorentz.exp_map0(x, 1.0),
        "log_map0": lambda x: lorentz.log_map0(x, 1.0),
        "half_aperture": lambda x: lorentz.half_aperture(x, 1.0),
        "dist_to_origin": lambda x: lorentz.dist_to_origin(x, 1.0),
        "time_component": lambda x: lorentz.time_component(x, 1.0),
        "pairwise_dist": lambda x: lorentz.pairwise_dist(x, y, 1.0),
        "dist_to_self": lambda x: lorentz.pairwise_dist(x, x, 1.0),
        "elementwise_self": lambda x: lorentz.elementwise_dist(x, x.detach(), 1.0),
        "oxy_apex": lambda x: lorentz.oxy_angle(x, y, 1.0),
        "oxy_point": lambda x: lorentz.oxy_angle(y, x, 1.0),
        "oxy_self": lambda x: lorentz.oxy_angle(x, x.detach(), 1.0),
        "lift_then_dist": lambda x: lorentz.pairwise_dist(lorentz.exp_map0(x, 1.0), y, 1.0),
        "lift_then_oxy": lambda x: lorentz.oxy_angle(lorentz.exp_map0(x, 1.0), lorentz.exp_map0(y, 1.0), 1.0),
    }
    for start_name, start in {"zero": zero, "huge": huge}.items():
        for name, fn in functions.items():
            assert torch.isfinite(_grads(fn, start)).all(), f"{name} at {start_name}"
    # exp_map0 saturates: outputs of huge tangent vectors have norm 2**15 / sqrt(c)
    saturated = lorentz.exp_map0(huge, 4.0)
    torch.testing.assert_close(saturated.norm(dim=-1), torch.full((3,), 2.0**15 / 2, dtype=dtype))


def test_curvature_as_learned_tensor_gets_gradient():
    log_curv = torch.zeros((), requires_grad=True)
    x, y = points(4, 3, 13).float(), points(4, 3, 14).float()
    loss = lorentz.pairwise_dist(lorentz.exp_map0(x, log_curv.exp()), lorentz.exp_map0(y, log_curv.exp()), log_curv.exp()).sum()
    loss.backward()
    assert log_curv.grad is not None and torch.isfinite(log_curv.grad) and log_curv.grad != 0
