"""Losses against independent oracles: torch's cross_entropy, a numpy log-softmax written out
here, explicit per-term sums of HyCoCLIP Eq. 6 and Eq. 11, and entailment cones built with
geoopt so that the exterior angle is known."""

from __future__ import annotations

import math

import geoopt
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hypvl.geometry import lorentz
from hypvl.losses.contrastive import (
    HCC_TERMS,
    clip_logits,
    hcc_loss,
    info_nce,
    lorentz_inner_logits,
    lorentz_logits,
    symmetric_contrastive,
)
from hypvl.losses.entailment import HCE_TERMS, entailment_loss, hce_loss


def randn(*shape, seed, scale=1.0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale


def numpy_info_nce(logits: np.ndarray, offset: int = 0) -> float:
    """Mean over rows of -log softmax at the positive column, by hand."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = np.arange(logits.shape[0])
    return float(-log_softmax[rows, rows + offset].mean())


def test_info_nce_matches_cross_entropy_and_numpy():
    logits = randn(6, 6, seed=0, scale=3.0)
    expected = F.cross_entropy(logits, torch.arange(6))
    torch.testing.assert_close(info_nce(logits), expected)
    assert info_nce(logits).item() == pytest.approx(numpy_info_nce(logits.numpy()), rel=1e-12)
    # rectangular logits with columns gathered from 3 ranks: this rank's positives start at 2*4
    wide = randn(4, 12, seed=1)
    assert info_nce(wide, offset=8).item() == pytest.approx(numpy_info_nce(wide.numpy(), offset=8), rel=1e-12)


def test_info_nce_hand_worked():
    # uniform logits: every row's loss is log(B)
    assert info_nce(torch.zeros(5, 5)).item() == pytest.approx(math.log(5), rel=1e-6)
    # a dominant diagonal drives the loss to 0, a dominant off-diagonal to ~the margin
    assert info_nce(torch.eye(3) * 50).item() == pytest.approx(0.0, abs=1e-12)
    assert info_nce(torch.tensor([[0.0, 30.0], [30.0, 0.0]])).item() == pytest.approx(30.0, rel=1e-6)


def test_symmetric_contrastive_averages_both_directions():
    logits = randn(5, 5, seed=2)
    expected = 0.5 * (numpy_info_nce(logits.numpy()) + numpy_info_nce(logits.numpy().T))
    assert symmetric_contrastive(logits).item() == pytest.approx(expected, rel=1e-12)
    # asymmetric logits give different directional losses, so the average matters
    assert numpy_info_nce(logits.numpy()) != pytest.approx(numpy_info_nce(logits.numpy().T))


def test_clip_logits_are_scaled_cosines():
    a, b = randn(4, 8, seed=3, scale=5.0), randn(3, 8, seed=4)
    logit_scale = math.log(1 / 0.07)
    cosines = (a.numpy() @ b.numpy().T) / np.outer(np.linalg.norm(a.numpy(), axis=1), np.linalg.norm(b.numpy(), axis=1))
    np.testing.assert_allclose(clip_logits(a, b, logit_scale).numpy(), cosines / 0.07, rtol=1e-10)


def test_lorentz_logits_are_scaled_negative_distances():
    a, b = randn(4, 8, seed=5), randn(3, 8, seed=6)
    logit_scale = torch.tensor(math.log(10.0), dtype=torch.float64)
    expected = -10.0 * lorentz.pairwise_dist(a, b, 0.7)
    torch.testing.assert_close(lorentz_logits(a, b, 0.7, logit_scale), expected)
    # closer candidates score higher
    logits = lorentz_logits(torch.zeros(1, 2), torch.tensor([[0.1, 0.0], [2.0, 0.0]]), 1.0, 0.0)
    assert logits[0, 0] > logits[0, 1]


def test_lorentz_inner_contrastive_on_a_hand_worked_2d_case():
    # c = 1, space components with whole time components sqrt(1 + |x|^2): (0, 0) -> 1, (2, +-2) -> 3
    images = torch.tensor([[0.0, 0.0], [2.0, 2.0]], dtype=torch.float64)
    texts = torch.tensor([[2.0, 2.0], [2.0, -2.0]], dtype=torch.float64)
    # <x, y>_L = <x, y> - x_time y_time: [[0 - 3, 0 - 3], [8 - 9, 0 - 9]], times exp(log 0.5)
    logits = lorentz_inner_logits(images, texts, 1.0, torch.tensor(math.log(0.5), dtype=torch.float64))
    assert logits.dtype == torch.float64
    torch.testing.assert_close(logits, torch.tensor([[-1.5, -1.5], [-0.5, -4.5]], dtype=torch.float64))
    # rows: log 2 and 4 + log(1 + e^-4); columns: 1 + log(1 + e^-1) and 3 + log(1 + e^-3)
    i2t = (math.log(2) + 4 + math.log1p(math.exp(-4))) / 2
    t2i = (4 + math.log1p(math.exp(-1)) + math.log1p(math.exp(-3))) / 2
    assert symmetric_contrastive(logits).item() == pytest.approx((i2t + t2i) / 2, rel=1e-12)
    # not the negative distance: -acosh(3) for the first row's two equal pairs
    assert lorentz_logits(images, texts, 1.0, 0.0)[0, 0].item() == pytest.approx(-math.acosh(3), rel=1e-12)


def batch(seed, n=6, d=5):
    return [randn(n, d, seed=seed + i, scale=0.7) for i in range(4)]


def hcc_terms_by_hand(image, text, box_image, box_text, c, logit_scale):
    def term(query, candidates):
        distances = lorentz.pairwise_dist(query, candidates, c).numpy()
        return numpy_info_nce(-distances * math.exp(logit_scale))

    return {
        "i2t": term(image, text),
        "t2i": term(text, image),
        "boxi2t": term(box_image, text),
        "boxt2i": term(box_text, image),
    }


def test_hcc_loss_is_mean_of_enabled_terms():
    image, text, box_image, box_text = batch(10)
    c, logit_scale = 0.8, math.log(1 / 0.07)
    by_hand = hcc_terms_by_hand(image, text, box_image, box_text, c, logit_scale)
    full = hcc_loss(image, text, box_image, box_text, c, logit_scale)
    assert full.item() == pytest.approx(sum(by_hand.values()) / 4, rel=1e-10)
    # HyCoCLIP Table 4 ablation: one term removed -> the mean of the other three (1/3)
    for removed in HCC_TERMS:
        kept = tuple(t for t in HCC_TERMS if t != removed)
        loss = hcc_loss(image, text, box_image, box_text, c, logit_scale, terms=kept)
        assert loss.item() == pytest.approx(sum(by_hand[t] for t in kept) / 3, rel=1e-10)
    # the image-text terms alone are MERU's symmetric contrastive loss
    meru = symmetric_contrastive(lorentz_logits(image, text, c, logit_scale))
    assert hcc_loss(image, text, box_image, box_text, c, logit_scale, terms=("i2t", "t2i")).item() == pytest.approx(meru.item(), rel=1e-10)


def test_hcc_box_terms_contrast_boxes_against_whole_samples_only():
    image, text, box_image, box_text = batch(20)
    base = hcc_loss(image, text, box_image, box_text, 1.0, 2.0, terms=("boxi2t",))
    # changing the box texts cannot affect the box-image term, changing the texts does
    assert hcc_loss(image, text, box_image, box_text * 3, 1.0, 2.0, terms=("boxi2t",)).item() == pytest.approx(base.item())
    assert hcc_loss(image, text * 3, box_image, box_text, 1.0, 2.0, terms=("boxi2t",)).item() != pytest.approx(base.item())


def test_hcc_with_candidates_gathered_across_ranks():
    # two "ranks" of 3 samples each: rank 1's loss against the gathered columns
    image, text, box_image, box_text = batch(25)
    ranks = [slice(0, 3), slice(3, 6)]
    local = [tensor[ranks[1]] for tensor in (image, text, box_image, box_text)]
    gathered = hcc_loss(*local, 1.3, 2.0, all_image=image, all_text=text, offset=3)

    def term(query, candidates):
        return numpy_info_nce(-lorentz.pairwise_dist(query, candidates, 1.3).numpy() * math.exp(2.0), offset=3)

    by_hand = [term(local[0], text), term(local[1], image), term(local[2], text), term(local[3], image)]
    assert gathered.item() == pytest.approx(sum(by_hand) / 4, rel=1e-10)


@pytest.mark.parametrize("terms", [(), ("i2t", "i2t"), ("i2t", "box2box")])
def test_hcc_rejects_bad_terms(terms):
    image, text, box_image, box_text = batch(30)
    with pytest.raises(ValueError, match="loss terms"):
        hcc_loss(image, text, box_image, box_text, 1.0, 2.0, terms=terms)


def lift(x: torch.Tensor, c: float) -> torch.Tensor:
    return torch.cat([torch.sqrt(1 / c + x.pow(2).sum(-1, keepdim=True)), x], dim=-1)


def cone_points(apex: torch.Tensor, thetas: torch.Tensor, c: float) -> torch.Tensor:
    """Points whose exterior angle at the apex is `thetas` (built with geoopt in full coordinates)."""
    manifold = geoopt.Lorentz(k=1 / c)
    p = lift(apex, c)
    outward = -manifold.logmap(p, lift(torch.zeros_like(apex), c))
    outward = outward / manifold.norm(outward, keepdim=True)
    other = manifold.proju(p, randn(*p.shape, seed=40))
    other = other - manifold.inner(p, other, outward, keepdim=True) * outward
    other = other / manifold.norm(other, keepdim=True)
    direction = torch.cos(thetas)[:, None] * outward + torch.sin(thetas)[:, None] * other
    return manifold.expmap(p, 0.5 * direction)[:, 1:]


@pytest.mark.parametrize("c", [1.0, 0.4])
def test_entailment_loss_zero_inside_cone_positive_outside(c):
    apex = randn(4, 3, seed=41, scale=2.0)
    aperture = lorentz.half_aperture(apex, c)
    inside = cone_points(apex, 0.5 * aperture, c)
    outside = cone_points(apex, aperture + 0.3, c)
    assert entailment_loss(apex, inside, c).item() == 0.0
    assert entailment_loss(apex, outside, c).item() == pytest.approx(0.3, rel=1e-5)
    # eta scales the aperture: with eta = 0.4 the half-aperture point is outside by 0.1 * aperture
    expected = (0.1 * aperture).mean().item()
    assert entailment_loss(apex, inside, c, eta=0.4).item() == pytest.approx(expected, abs=1e-6)
    # a wider constant K widens the cone: asin(2K/(sqrt(c)|x|)) for K = 0.3
    wide = torch.asin(0.6 / (apex.norm(dim=-1) * math.sqrt(c)))
    expected = torch.clamp(aperture + 0.3 - wide, min=0).mean().item()
    assert entailment_loss(apex, outside, c, min_radius=0.3).item() == pytest.approx(expected, rel=1e-5)


def hce_terms_by_hand(image, text, box_image, box_text, c, eta_inter, eta_intra):
    def term(general, specific, eta):
        residual = lorentz.oxy_angle(general, specific, c) - eta * lorentz.half_aperture(general, c)
        return float(np.maximum(residual.numpy(), 0).mean())

    return {
        "t_i": term(text, image, eta_inter),
        "tbox_ibox": term(box_text, box_image, eta_inter),
        "ibox_i": term(box_image, image, eta_intra),
        "tbox_t": term(box_text, text, eta_intra),
    }


def test_hce_loss_is_sum_of_enabled_terms():
    image, text, box_image, box_text = batch(50, n=32)
    c = 0.9
    by_hand = hce_terms_by_hand(image, text, box_image, box_text, c, 0.7, 1.2)
    assert all(value > 0 for value in by_hand.values())  # every term contributes
    full = hce_loss(image, text, box_image, box_text, c)
    assert full.item() == pytest.approx(sum(by_hand.values()), rel=1e-10)
    for removed in HCE_TERMS:
        kept = tuple(t for t in HCE_TERMS if t != removed)
        loss = hce_loss(image, text, box_image, box_text, c, terms=kept)
        assert loss.item() == pytest.approx(full.item() - by_hand[removed], rel=1e-10)
    # with eta = 1 the text-image term is MERU's entailment loss
    meru = entailment_loss(text, image, c)
    assert hce_loss(image, text, box_image, box_text, c, eta_inter=1.0, terms=("t_i",)).item() == pytest.approx(meru.item(), rel=1e-12)


def test_hce_uses_inter_and_intra_thresholds_on_the_right_terms():
    image, text, box_image, box_text = batch(60, n=32)
    inter_only = ("t_i", "tbox_ibox")
    intra_only = ("ibox_i", "tbox_t")
    base_inter = hce_loss(image, text, box_image, box_text, 1.0, terms=inter_only)
    base_intra = hce_loss(image, text, box_image, box_text, 1.0, terms=intra_only)
    assert hce_loss(image, text, box_image, box_text, 1.0, eta_intra=0.1, terms=inter_only).item() == pytest.approx(base_inter.item())
    assert hce_loss(image, text, box_image, box_text, 1.0, eta_inter=0.1, terms=intra_only).item() == pytest.approx(base_intra.item())
    assert hce_loss(image, text, box_image, box_text, 1.0, eta_inter=0.1, terms=inter_only) > base_inter


def test_losses_float32_under_autocast_with_finite_gradients():
    features = [randn(8, 16, seed=70 + i).float().requires_grad_(True) for i in range(4)]
    log_curv = torch.zeros((), requires_grad=True)
    logit_scale = torch.tensor(math.log(1 / 0.07), requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        points = [lorentz.exp_map0(f.bfloat16() * 0.3, log_curv.exp()) for f in features]
        contrastive = hcc_loss(*points, log_curv.exp(), logit_scale)
        entailment = hce_loss(*points, log_curv.exp())
        clip = symmetric_contrastive(clip_logits(features[0].bfloat16(), features[1].bfloat16(), logit_scale))
    for value in (contrastive, entailment, clip):
        assert value.dtype == torch.float32
    (contrastive + 0.1 * entailment + clip).backward()
    for tensor in (*features, log_curv, logit_scale):
        assert torch.isfinite(tensor.grad).all() and tensor.grad.abs().sum() > 0
