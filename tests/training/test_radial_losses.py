"""Radial Embedding geometry and alignment losses against cases worked by hand (2-D, 3-D), the law of cosines in
float64, and the paper's equations (HierarCaps Sec. 3-4, App. B.2, B.4, C.5)."""

import math

import numpy as np
import pytest
import torch

from hypvl.geometry import radial
from hypvl.losses.radial import ec_terms, mined_loss, re_terms, regulariser

PI = math.pi


def t(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def along(point, root, angle: float, length: float = 1.0) -> list[float]:
    """A 2-D point `length` away from `point`, turned `angle` from the direction root -> point (so that the exterior
    angle Xi_root(point, result) is `angle`)."""
    (px, py), (rx, ry) = point, root
    base = math.atan2(py - ry, px - rx)
    return [px + length * math.cos(base + angle), py + length * math.sin(base + angle)]


def test_exterior_angle_and_radius_on_hand_worked_2d_and_3d_cases():
    origin = t([0.0, 0.0])
    # 2-D: straight on (0), a right angle (pi/2), straight back (pi)
    general = t([[1.0, 0.0], [0.0, 2.0], [1.0, 0.0]])
    specific = t([[2.0, 0.0], [1.0, 2.0], [0.5, 0.0]])
    torch.testing.assert_close(radial.exterior_angle(general, specific, origin), t([0.0, PI / 2, PI]))
    torch.testing.assert_close(radial.radius(general, origin), t([1.0, 2.0, 1.0]))
    # 3-D, root off the origin: e - r = (0, 0, 1); e' - e = (0, 1, 1) is pi/4 off it; e'' - e = (1, 0, -sqrt 3)
    root = t([1.0, 1.0, 1.0])
    e, e1, e2 = t([1.0, 1.0, 2.0]), t([1.0, 2.0, 3.0]), t([2.0, 1.0, 2.0 - math.sqrt(3.0)])
    torch.testing.assert_close(radial.exterior_angle(e, e1, root), t(PI / 4))
    torch.testing.assert_close(radial.exterior_angle(e, e2, root), t(5 * PI / 6))
    torch.testing.assert_close(radial.radius(e1, root), t(math.sqrt(5.0)))


def test_exterior_angle_is_pi_minus_the_triangle_angle_by_the_law_of_cosines():
    rng = np.random.default_rng(0)
    r, e, f = rng.normal(size=(3, 50, 8))
    side_re, side_ef, side_rf = (np.linalg.norm(a - b, axis=1) for a, b in ((r, e), (e, f), (r, f)))
    angle_at_e = np.arccos((side_re ** 2 + side_ef ** 2 - side_rf ** 2) / (2 * side_re * side_ef))
    got = radial.exterior_angle(t(e), t(f), t(r))
    np.testing.assert_allclose(got.numpy(), np.pi - angle_at_e, atol=1e-9)


def test_half_aperture_is_arcsin_of_epsilon_over_the_radius_capped_at_a_right_angle():
    origin = t([0.0, 0.0])
    points = t([[0.1, 0.0], [0.0, -0.01], [1.0, 0.0]])
    torch.testing.assert_close(radial.half_aperture(points, origin, 0.05), t([PI / 6, PI / 2, math.asin(0.05)]))


def test_re_terms_are_the_two_exterior_angles_and_their_sum_is_l_re():
    root = t([0.0, 0.0])
    general = t([[1.0, 0.0], [0.0, 2.0]])
    specific = t([along([1.0, 0.0], [0, 0], 0.0), along([0.0, 2.0], [0, 0], PI / 2)])
    negative = t([along([1.0, 0.0], [0, 0], 3 * PI / 4), along([0.0, 2.0], [0, 0], PI)])
    positive_terms, negative_terms = re_terms(general, specific, negative, root)
    torch.testing.assert_close(positive_terms, t([0.0, PI / 2]), atol=2e-3, rtol=0)  # arccos kept off +-1 (eps)
    torch.testing.assert_close(negative_terms, t([-3 * PI / 4, -PI]), atol=2e-3, rtol=0)
    torch.testing.assert_close(positive_terms + negative_terms, t([-3 * PI / 4, -PI / 2]), atol=3e-3, rtol=0)
    # L_RE = Xi(e, e') - Xi(e, e''): 3-D, root off the origin (angles pi/4 and 5 pi/6)
    root3 = t([1.0, 1.0, 1.0])
    p, n = re_terms(t([[1.0, 1.0, 2.0]]), t([[1.0, 2.0, 3.0]]), t([[2.0, 1.0, 2.0 - math.sqrt(3.0)]]), root3)
    torch.testing.assert_close(p + n, t([PI / 4 - 5 * PI / 6]))


def test_hard_example_mining_takes_the_triplets_of_the_hardest_positive_and_negative():
    # two tiers x two items: Xi(e, e') and Xi(e, e'')
    positive = t([[0.1, 0.5], [0.3, 0.2]])
    xi_negative = t([[1.0, 2.0], [0.4, 1.5]])
    out = mined_loss(positive, -xi_negative)
    # L = P - Xi'' = [[-0.9, -1.5], [-0.1, -1.3]]: mean -0.95; hardest positive (0, 1): -1.5; hardest negative
    # (smallest Xi'', (1, 0)): -0.1
    torch.testing.assert_close(out["mean"], t(-0.95))
    torch.testing.assert_close(out["minimax"], t(-1.6))
    # the mean is the authors' P.mean() + N.mean(); a tie goes to the first triplet in (tier, item) order
    torch.testing.assert_close(out["mean"], positive.mean() - xi_negative.mean())
    tied = mined_loss(t([[0.5, 0.5], [0.1, 0.1]]), -t([[1.0, 0.3], [0.3, 1.0]]))
    torch.testing.assert_close(tied["minimax"], t((0.5 - 1.0) + (0.5 - 0.3)))  # positive (0, 0); negative (0, 1)


def test_mining_passes_gradient_to_the_mined_triplets_only_through_their_terms():
    positive = t([[0.1, 0.5], [0.3, 0.2]]).requires_grad_()
    negative = (-t([[1.0, 2.0], [0.4, 1.5]])).requires_grad_()
    mined_loss(positive, negative)["minimax"].backward()
    expected = torch.zeros(2, 2, dtype=torch.float64)
    expected[0, 1] = expected[1, 0] = 1.0
    torch.testing.assert_close(positive.grad, expected)
    torch.testing.assert_close(negative.grad, expected)


@pytest.fixture
def cone_triplet():
    """e at radius 0.1 from the root (theta = pi/6 at epsilon 0.05); Xi(e, e') = pi/3, Xi(e, e'') = pi/12."""
    root, e = [0.0, 0.0], [0.1, 0.0]
    return (t([e]), t([along(e, root, PI / 3, 0.1)]), t([along(e, root, PI / 12, 0.1)]), t(root))


def test_ec_margin_terms_of_both_readings_worked_by_hand(cone_triplet):
    general, specific, negative, root = cone_triplet
    alpha = PI / 8
    inside = ec_terms(general, specific, negative, root, alpha, 0.05, "inside")
    outside = ec_terms(general, specific, negative, root, alpha, 0.05, "outside")
    # App. C.5: [Xi' - theta + alpha]^+ = pi/6 + pi/8; [-(Xi'' - theta + alpha)]^+ = [-pi/24]^+ = 0
    torch.testing.assert_close(torch.cat(inside), t([PI / 6 + PI / 8, 0.0]))
    # App. B.2: max(-alpha, Xi' - theta) = pi/6; max(-alpha, theta - Xi'') = pi/12
    torch.testing.assert_close(torch.cat(outside), t([PI / 6, PI / 12]))
    # alpha = 0: one loss, Sec. 6.3's [+-(Xi - theta)]^+
    zero = [torch.cat(ec_terms(general, specific, negative, root, 0.0, 0.05, margin))
            for margin in ("inside", "outside")]
    torch.testing.assert_close(zero[0], t([PI / 6, PI / 12]))
    torch.testing.assert_close(zero[1], zero[0])


def test_ec_with_a_large_outside_margin_is_the_re_loss(cone_triplet):
    """App. B.2: as alpha grows the summed margin losses of a positive and a negative pair become L_RE."""
    general, specific, negative, root = cone_triplet
    ec_positive, ec_negative = ec_terms(general, specific, negative, root, PI, 0.05, "outside")
    re_positive, re_negative = re_terms(general, specific, negative, root)
    torch.testing.assert_close(ec_positive + ec_negative, re_positive + re_negative)
    # the inside reading does not: its negative hinge closes as alpha grows
    inside_negative = ec_terms(general, specific, negative, root, PI, 0.05, "inside")[1]
    torch.testing.assert_close(inside_negative, t([0.0]))


def test_only_the_outside_margin_trains_differently_as_alpha_grows():
    """Why Table 5 needs App. B.2's reading: with C.5's printed formula a positive hinge that is open stays open for
    every alpha > 0 and a negative hinge past the cone stays shut, so the gradient does not depend on alpha."""
    root, e = [0.0, 0.0], [0.1, 0.0]  # theta = pi/6; Xi(e, e') = pi/3, Xi(e, e'') = 2 pi/3 (pi/2 past the cone)

    def gradients(loss):
        points = [t([e]), t([along(e, root, PI / 3, 0.1)]), t([along(e, root, 2 * PI / 3, 0.1)])]
        for point in points:
            point.requires_grad_()
        positive, negative = loss(*points, t(root))
        (positive + negative).sum().backward()
        return torch.cat([point.grad for point in points])

    def ec(alpha, margin):
        return gradients(lambda *args: ec_terms(*args, alpha, 0.05, margin))

    inside = [ec(alpha, "inside") for alpha in (PI / 8, PI / 4, 3 * PI / 4)]
    torch.testing.assert_close(inside[0], inside[1])
    torch.testing.assert_close(inside[0], inside[2])
    torch.testing.assert_close(ec(PI / 8, "outside"), inside[0])  # below pi/2 both shut the negative hinge
    torch.testing.assert_close(ec(3 * PI / 4, "outside"), gradients(re_terms))  # past it: L_RE's gradient
    assert not torch.allclose(gradients(re_terms), inside[0])


def test_regulariser_readings_share_their_optimum_and_differ_by_half_the_gradient():
    frozen = t([[1.0, 0.0], [1.0, 0.0]])
    current = t([[1.0, 0.0], [0.0, 1.0]])  # cosines 1 and 0
    torch.testing.assert_close(regulariser(current, frozen, "code"), t(0.25))  # (1 - 0.5) / 2
    torch.testing.assert_close(regulariser(current, frozen, "paper"), t(-0.5))  # -mean cos
    torch.testing.assert_close(regulariser(frozen, frozen, "code"), t(0.0))
    grads = {}
    for reading in ("code", "paper"):
        x = current.clone().requires_grad_()
        regulariser(x, frozen, reading).backward()
        grads[reading] = x.grad
    torch.testing.assert_close(grads["code"], grads["paper"] / 2)
    with pytest.raises(ValueError, match="regulariser reading"):
        regulariser(current, frozen, "papers")
