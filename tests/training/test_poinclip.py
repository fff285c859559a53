"""PoinCLIP: its losses on hand-worked 2-D cases (float64), the model against geoopt's PoincareBall, where its
gradients go, its overrides in the plan, and bad overrides refused before training starts.

Hand-worked case (curvature -1, K = 0.1): x = (0.5, 0), y = (0.5, 0.5).
- Eq. 7 at apex x: (<x,y>(1+|x|^2) - |x|^2 (1+|y|^2)) / (|x| |x-y| sqrt(1 + |x|^2|y|^2 - 2<x,y>))
  = (0.25 * 1.25 - 0.25 * 1.5) / (0.5 * 0.5 * sqrt(0.625)) = -1/sqrt(10); at apex y (swap the roles):
  (0.25 * 1.5 - 0.5 * 1.25) / (sqrt(0.5) * 0.5 * sqrt(0.625)) = -2/sqrt(5).
- Eq. 8: aper(x) = asin(0.1 * 0.75 / 0.5) = asin(0.15); aper(y) = asin(0.1 * 0.5 / sqrt(0.5)) = asin(0.05 sqrt(2)).
- Eq. 6 (literal reading, the default): H(x) = -0.5 log2 0.5 = 0.5 bit, H(y) = 2 * 0.5 bit = 1 bit; (softmax reading)
  softmax(y) is uniform, 1 bit; softmax(x) = (s, 1 - s), s = 1 / (1 + e^-0.5), below 1 bit. Under both, x (|x| = 0.5,
  nearer the origin than |y| = 0.71) has the lower entropy and is the apex whichever modality it is.
"""

import csv
import json
import math

import geoopt
import numpy as np
import pytest
import scipy.special
import scipy.stats
import torch

from helpers import REPO
from helpers.models import TINY, _batch, _model
from helpers.training import TRAIN_CFG, _shards
from hypvl.config import load_config
from hypvl.errors import InputError
from hypvl.evaluate.radial import entailment_root, exterior_angles, radii
from hypvl.geometry import poincare
from hypvl.losses.contrastive import symmetric_contrastive
from hypvl.losses.poinclip import (
    ENTROPY_INPUTS,
    apex_statistics,
    cone_loss,
    embedding_entropy,
    image_is_apex,
    poincare_logits,
    poinclip_entailment,
)
from hypvl.replication.compare import compare_table
from hypvl.spec.load import load_all_specs, load_spec
from hypvl.spec.terms import Mean, Measure
from hypvl.train.trainer import train
from hypvl.workflow import Plan

X = torch.tensor([[0.5, 0.0]], dtype=torch.float64)
Y = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
EXT_AT_X, APER_X = math.acos(-1 / math.sqrt(10)), math.asin(0.15)
EXT_AT_Y, APER_Y = math.acos(-2 / math.sqrt(5)), math.asin(0.05 * math.sqrt(2))


def test_entropy_readings_match_scipy():
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    softmax = scipy.stats.entropy(scipy.special.softmax(x.numpy(), axis=-1), base=2, axis=-1)
    torch.testing.assert_close(embedding_entropy(x, "softmax"), torch.from_numpy(softmax))
    absolute = scipy.stats.entropy(x.abs().numpy(), base=2, axis=-1)  # scipy normalises to sum 1
    torch.testing.assert_close(embedding_entropy(x, "abs"), torch.from_numpy(absolute))
    # by hand: a uniform softmax is 1 bit; a one-hot |x| is 0 bits; (0.5, 0) under softmax is below 1 bit
    s = 1 / (1 + math.exp(-0.5))
    torch.testing.assert_close(embedding_entropy(torch.cat([Y, X]), "softmax"),
                               torch.tensor([1.0, -s * math.log2(s) - (1 - s) * math.log2(1 - s)], dtype=torch.float64))
    torch.testing.assert_close(embedding_entropy(X, "abs"), torch.zeros(1, dtype=torch.float64))
    # literal: -sum |x_i| log2 |x_i| by hand (0 log 0 = 0), and scipy's elementwise entr on |x| in nats
    torch.testing.assert_close(embedding_entropy(torch.cat([Y, X])), torch.tensor([1.0, 0.5], dtype=torch.float64))
    literal = scipy.special.entr(x.abs().numpy()).sum(axis=-1) / math.log(2)
    torch.testing.assert_close(embedding_entropy(x, "literal"), torch.from_numpy(literal))
    with pytest.raises(ValueError, match="entropy reading"):
        embedding_entropy(X, "raw")


def test_entailment_loss_hand_worked_2d():
    lambda_reg = 0.1
    at_x = (EXT_AT_X - APER_X) - lambda_reg * EXT_AT_X
    at_y = (EXT_AT_Y - APER_Y) - lambda_reg * EXT_AT_Y
    torch.testing.assert_close(cone_loss(X, Y, 1.0, lambda_reg), torch.tensor(at_x, dtype=torch.float64))
    # entropy order: x is the apex both when it is the image (pair 0) and when it is the text (pair 1)
    images, texts = torch.cat([X, Y]), torch.cat([Y, X])
    assert image_is_apex(images, texts).tolist() == [True, False]
    torch.testing.assert_close(poinclip_entailment(images, texts, 1.0, lambda_reg), torch.tensor(at_x, dtype=torch.float64))
    # the "Poincare" ablation: the text is always the apex (pair 0: apex y, pair 1: apex x)
    expected = 0.5 * (at_y + at_x)
    torch.testing.assert_close(poinclip_entailment(images, texts, 1.0, lambda_reg, order="text_entails_image"),
                               torch.tensor(expected, dtype=torch.float64))
    # inside the cone only the -lambda_reg * ext reward is left: the loss is negative
    inside = torch.tensor([[0.7, 0.01]], dtype=torch.float64)
    angle = poincare.oxy_angle(X, inside, 1.0).item()
    assert angle < APER_X
    torch.testing.assert_close(cone_loss(X, inside, 1.0, 0.5), torch.tensor(-0.5 * angle, dtype=torch.float64))
    with pytest.raises(ValueError, match="entailment order"):
        image_is_apex(X, Y, order="image_entails_text")


def _at_radius(radius: float, count: int, dim: int, seed: int) -> torch.Tensor:
    """`count` points of norm `radius` in random directions of R^dim."""
    directions = torch.randn(count, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return radius * torch.nn.functional.normalize(directions, dim=-1)


def test_default_entropy_makes_the_point_nearer_the_origin_the_apex():
    """The paper assumes entropy increases along the cone, outward from the origin, so the simpler concept (lower
    entropy) nearer the origin is the apex. The default (literal) reading does so; softmax reverses it; abs ignores
    the radius."""
    assert _model("poinclip").entropy == "literal"
    inner, outer = _at_radius(0.5, 200, 64, 0), _at_radius(0.7, 200, 64, 1)
    # points of known radius in independent directions: the text (norm 0.5) is the apex of every pair
    assert not image_is_apex(outer, inner).any() and image_is_apex(inner, outer).all()
    assert image_is_apex(outer, inner, reading="softmax").all()  # the outer image: the cone order reversed
    # along one ray: the literal entropy grows with the radius (every |x_i| < 1/e), the softmax one falls
    ray = _at_radius(1.0, 1, 64, 2) * torch.linspace(0.1, 0.99, 12, dtype=torch.float64)[:, None]
    assert (embedding_entropy(ray).diff() > 0).all() and (embedding_entropy(ray, "softmax").diff() < 0).all()
    assert not image_is_apex(ray[-1:], ray[:1]).item() and image_is_apex(ray[-1:], ray[:1], reading="softmax").item()
    # abs sees the direction only: equal along the ray
    torch.testing.assert_close(embedding_entropy(ray, "abs"), embedding_entropy(ray[:1], "abs").expand(12))


def _spread(radius: float, k: int, dim: int = 512) -> torch.Tensor:
    """(1, dim): a point of norm `radius` on its first `k` coordinates, each of magnitude radius / sqrt(k), signs
    alternating; its literal entropy is radius sqrt(k) log2(sqrt(k) / radius)."""
    point = torch.zeros(1, dim, dtype=torch.float64)
    point[0, :k] = radius / math.sqrt(k) * (-1.0) ** torch.arange(k, dtype=torch.float64)
    return point


def test_literal_entropy_orders_anisotropic_points_by_their_spread_as_well_as_their_radius():
    """Closed form: an image on 256 of 512 coordinates at norm 0.7 (0.7 * 16 * log2(16 / 0.7) = 50.56 bits) has less
    literal entropy than a text on all 512 at norm 0.5 (0.5 sqrt(512) log2(sqrt(512) / 0.5) = 62.23 bits): the image,
    farther from the origin, is the apex. Spread alike (isotropic), or the text on 4 coordinates (2 bits), the nearer
    text is. Pairs 3 and 4: the text, farther, is the apex; the radii tie (0.5 and 0.5, exactly) and agree."""
    entropy = lambda radius, k: radius * math.sqrt(k) * math.log2(math.sqrt(k) / radius)  # noqa: E731
    for radius, k in ((0.7, 256), (0.5, 512), (0.7, 512), (0.5, 4), (0.5, 256)):
        assert embedding_entropy(_spread(radius, k)).item() == pytest.approx(entropy(radius, k), rel=1e-12)
    assert entropy(0.7, 256) == pytest.approx(50.56, abs=0.01) and entropy(0.5, 512) == pytest.approx(62.23, abs=0.01)
    pairs = [((0.7, 256), (0.5, 512)), ((0.7, 512), (0.5, 512)), ((0.7, 256), (0.5, 4)), ((0.5, 512), (0.7, 256)),
             ((0.5, 256), (0.5, 4))]
    images = torch.cat([_spread(*image) for image, _ in pairs])
    texts = torch.cat([_spread(*text) for _, text in pairs])
    assert image_is_apex(images, texts).tolist() == [True, False, False, False, False]
    stats = apex_statistics(images, texts)
    assert stats["apex_rate"].item() == 1 / 5 and stats["apex_radius_agreement"].item() == 3 / 5
    # the text as apex of every pair ("Poincare" ablation): only pair 3's text lies farther out
    stats = apex_statistics(images, texts, order="text_entails_image")
    assert stats["apex_rate"].item() == 0 and stats["apex_radius_agreement"].item() == 4 / 5
    # pair 0 alone: farther out yet the apex, under every reading (softmax reverses the radius order, abs ignores it)
    for reading in ENTROPY_INPUTS:
        stats = apex_statistics(images[:1], texts[:1], reading=reading)
        assert (stats["apex_rate"].item(), stats["apex_radius_agreement"].item()) == (1, 0), reading


def _directions(count: int, dim: int, used: int, radius: float, seed: int) -> torch.Tensor:
    """`count` points of norm `radius` in random directions of the first `used` of `dim` coordinates."""
    points = torch.zeros(count, dim, dtype=torch.float64)
    points[:, :used] = _at_radius(radius, count, used, seed)
    return points


def test_random_anisotropic_images_are_the_apex_of_every_pair_though_farther_out():
    """The review's case in 512 dimensions: images in random directions of 256 coordinates at norm 0.7, texts in
    random directions of all 512 at norm 0.5: the image is the apex of all 300 pairs, none agreeing with the radius
    order; images isotropic at 0.7: the text is the apex of all, every pair agreeing."""
    texts = _directions(300, 512, 512, 0.5, 0)
    stats = apex_statistics(_directions(300, 512, 256, 0.7, 1), texts)
    assert stats["apex_rate"].item() == 1.0 and stats["apex_radius_agreement"].item() == 0.0
    stats = apex_statistics(_directions(300, 512, 512, 0.7, 2), texts)
    assert stats["apex_rate"].item() == 0.0 and stats["apex_radius_agreement"].item() == 1.0


@pytest.mark.parametrize("order", ["entropy", "text_entails_image"])
def test_apex_statistics_match_a_direct_numpy_computation(order):
    """Random anisotropic pairs (coordinates scaled by 0.01-1, radii 0.05-0.9; rows 0-7 with the text the negated
    image: equal entropies and radii, so the text is the apex and agrees) against numpy's own -sum |x| log2 |x|."""
    generator = torch.Generator().manual_seed(7)
    count, dim = 64, 32
    raw = torch.randn(2, count, dim, generator=generator, dtype=torch.float64)
    raw = raw * 10 ** (-2 * torch.rand(2, count, dim, generator=generator, dtype=torch.float64))
    radii = 0.05 + 0.85 * torch.rand(2, count, 1, generator=generator, dtype=torch.float64)
    images, texts = radii * torch.nn.functional.normalize(raw, dim=-1)
    texts[:8] = -images[:8]
    image, text = images.numpy(), texts.numpy()
    entropy = lambda x: -(np.abs(x) * np.log2(np.abs(x))).sum(axis=-1)  # noqa: E731  (no zero coordinate here)
    image_first = entropy(image) < entropy(text) if order == "entropy" else np.zeros(count, dtype=bool)
    image_norm, text_norm = np.linalg.norm(image, axis=-1), np.linalg.norm(text, axis=-1)
    agree = np.where(image_first, image_norm <= text_norm, text_norm <= image_norm)
    stats = apex_statistics(images, texts, order=order)
    assert not image_first[:8].any() and agree[:8].all()
    assert 0 < agree.mean() < 1 and (order != "entropy" or 0 < image_first.mean() < 1)  # both kinds of pair present
    assert stats["apex_rate"].item() == pytest.approx(image_first.mean(), abs=1e-15)
    assert stats["apex_radius_agreement"].item() == pytest.approx(agree.mean(), abs=1e-15)


def test_contrastive_logits_are_negative_geoopt_distances_over_tau():
    ball = geoopt.PoincareBall(c=2.0)
    a = poincare.exp_map0(torch.randn(4, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.3, 2.0)
    b = poincare.exp_map0(torch.randn(5, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 0.3, 2.0)
    expected = -ball.dist(a[:, None], b[None]) / 0.07
    torch.testing.assert_close(poincare_logits(a, b, 2.0, math.log(1 / 0.07)), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("exp_map, factor", [("standard", 1.0), ("literal", 0.5)])
def test_model_lifts_scaled_features_into_the_ball_and_adds_the_entailment_term(exp_map, factor):
    model, batch = _model("poinclip", exp_map=exp_map, entail_weight=0.3, lambda_reg=0.2), _batch()
    assert model.geometry == "poincare" and model.curvature.item() == pytest.approx(1.0)
    assert model.visual_alpha.exp().item() == pytest.approx(8 ** -0.5)
    ball = geoopt.PoincareBall(c=1.0)
    x = model.image_features(batch["images"]) * 8 ** -0.5 * factor
    y = model.text_features(batch["tokens"]) * 8 ** -0.5 * factor
    img, txt = ball.expmap0(x), ball.expmap0(y)
    torch.testing.assert_close(model.encode_image(batch["images"]), img, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.encode_text(batch["tokens"]), txt, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.similarity(img, txt), -ball.dist(img[:, None], txt[None]), rtol=1e-5, atol=1e-5)
    contrastive = symmetric_contrastive(-ball.dist(img[:, None], txt[None]) / 0.07)
    entail = poinclip_entailment(img, txt, 1.0, 0.2)
    terms = model.loss(batch)
    assert terms["contrastive"].item() == pytest.approx(contrastive.item(), rel=1e-5)
    assert terms["entailment"].item() == pytest.approx(entail.item(), rel=1e-5, abs=1e-6)
    assert terms["loss"].item() == pytest.approx((contrastive + 0.3 * entail).item(), rel=1e-5)


def _grads(model, loss) -> dict:
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}


def test_gradients_reach_exactly_the_parameters_they_should():
    model, batch = _model("poinclip", entail_weight=1.0), _batch()
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert {"logit_scale", "curv", "visual_alpha", "textual_alpha"} <= trainable
    grads = _grads(model, model.loss(batch)["loss"])
    assert {name for name, g in grads.items() if g is not None} == trainable
    assert all(torch.isfinite(grads[name]).all() for name in trainable)
    assert all(grads[name].abs().sum() > 0 for name in ("logit_scale", "curv", "visual_alpha", "textual_alpha"))
    # the entailment term alone reaches the encoders, projections, scales and curvature, not the temperature
    img, txt = model.encode_image(batch["images"]), model.encode_text(batch["tokens"])
    grads = _grads(model, poinclip_entailment(img, txt, model.curvature, 0.1))
    assert grads["logit_scale"] is None
    assert all(grads[name].abs().sum() > 0 for name in ("curv", "visual_alpha", "textual_alpha",
                                                         "visual_proj.weight", "textual_proj.weight"))
    # lambda = 0 leaves only the contrastive gradient; a fixed curvature gets none
    off = _model("poinclip", entail_weight=0.0)
    contrastive_only = _grads(off, symmetric_contrastive(
        poincare_logits(off.encode_image(batch["images"]), off.encode_text(batch["tokens"]), off.curvature,
                        off.logit_scale)))
    for name, grad in _grads(off, off.loss(batch)["loss"]).items():
        assert grad is None and contrastive_only[name] is None or torch.equal(grad, contrastive_only[name]), name
    fixed = _model("poinclip", learn_curv=False)
    assert _grads(fixed, fixed.loss(batch)["loss"])["curv"] is None


def test_radial_geometry_of_a_poinclip_model_is_the_ball():
    model = _model("poinclip")
    points = poincare.exp_map0(torch.randn(6, 8, generator=torch.Generator().manual_seed(3)), 1.0)
    assert entailment_root(model, tokenizer=None) is None
    torch.testing.assert_close(radii(model, points, None), poincare.dist_to_origin(points, 1.0))
    torch.testing.assert_close(exterior_angles(model, points[:3], points[3:], None),
                               poincare.oxy_angle(points[:3], points[3:], 1.0))


def test_every_poinclip_training_is_runnable_and_ablations_differ_only_in_their_knobs():
    config = {**load_config(), "results_dir": "/nonexistent/results", "reports_dir": "/nonexistent/reports",
              "replication_dir": str(REPO / "replication"), "expected_dir": str(REPO / "expected")}
    plan = Plan(config)
    spec = load_all_specs(REPO / "replication", REPO / "expected")["poinclip"]
    trained = [exp for exp, e in spec.experiments.items() if e.source == "train"]
    assert len(trained) == 35 and all(plan.runnable(exp) for exp in trained)
    # PoinCLIP's own models are trained under their own ids; its CLIP/MERU rows reuse MERU's models
    assert all(plan.trains(exp) for exp in trained if spec.experiments[exp].method == "poinclip")
    assert plan.model_of("poin_meru_vits") == "meru_meru_vits" and plan.model_of("poin_clip_vitl") == "meru_clip_vitl"
    poincare_row, poinclip_row = spec.experiments["poin_poincare_vits"], spec.experiments["poin_poinclip_vits"]
    assert {**poincare_row.overrides, "entailment_order": "entropy"} == {**poinclip_row.overrides,
                                                                          "entailment_order": "entropy"}
    grid = {(e.overrides["lambda_reg"], e.overrides["entail_weight"]) for exp, e in spec.experiments.items()
            if exp.startswith("poin_grid_")}
    assert grid == {(r, w) for r in (0, 0.01, 0.1, 0.5, 1) for w in (0, 0.01, 0.1, 0.5, 1)}


@pytest.mark.parametrize("experiment, message", [
    ({"method": "poincareclip"}, r"experiment 'bad': unknown method 'poincareclip'"),
    ({"method": "poinclip", "overrides": {"gamma": 0.1}},
     r"experiment 'bad': method 'poinclip' does not support the overrides \['gamma'\]"),
    ({"method": "meru", "overrides": {"lambda_reg": 0.1}},
     r"experiment 'bad': method 'meru' does not support the overrides \['lambda_reg'\]"),
    ({"method": "poinclip", "overrides": {"entailment_order": "image_entails_text"}},
     r"experiment 'bad': PoinCLIP entailment_order must be one of \['entropy', 'text_entails_image'\]"),
])
def test_bad_experiments_are_refused_before_training_starts(tmp_path, experiment, message):
    shards = _shards(tmp_path / "data")
    with pytest.raises(InputError, match=message):
        train({"id": "bad", "backbone": "vit_s16", "seed": 0, **experiment}, TINY, TRAIN_CFG, shards,
              tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_a_poinclip_training_run_logs_both_terms(tmp_path):
    exp = {"id": "p", "method": "poinclip", "backbone": "vit_s16", "seed": 0,
           "overrides": {"entail_weight": 0.1, "lambda_reg": 0.1}}
    summary = train(exp, TINY, TRAIN_CFG, _shards(tmp_path / "data"), tmp_path / "p", progress=False)
    assert math.isfinite(summary["final"]["loss"]) and math.isfinite(summary["final"]["entailment"])
    assert summary["final"]["curvature"] == pytest.approx(1.0, rel=0.05)


def test_the_apex_order_reaches_the_log_and_the_summary_and_moves_no_number(tmp_path, monkeypatch):
    """Every step logs the batch's apex rate and radius agreement (the model's loss terms report them, computed
    without gradient); the summary holds the last step's and their mean over the steps. Trained again without them
    (`apex_statistics` reporting nothing), every weight and every other log cell is bitwise the same."""
    model, batch = _model("poinclip"), _batch()
    terms = model.loss(batch)
    img, txt = model.encode_image(batch["images"]), model.encode_text(batch["tokens"])
    for name, value in apex_statistics(img, txt).items():
        assert not terms[name].requires_grad and torch.equal(terms[name], value)
    shards, exp = _shards(tmp_path / "data"), {"id": "p", "method": "poinclip", "backbone": "vit_s16", "seed": 0}
    runs = {}
    for name in ("with", "without"):
        if name == "without":
            monkeypatch.setattr("hypvl.models.poinclip.apex_statistics", lambda *args: {})
        summary = train(exp, TINY, TRAIN_CFG, shards, tmp_path / name, progress=False)
        with open(tmp_path / name / "train_log.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        weights = torch.load(tmp_path / name / "checkpoint.pt", weights_only=True)["model"]
        runs[name] = summary, rows, weights
    (summary, rows, weights), (plain, plain_rows, plain_weights) = runs["with"], runs["without"]
    apex = ("apex_rate", "apex_radius_agreement")
    assert len(rows) == TRAIN_CFG["steps"] and all(0 <= float(row[name]) <= 1 for row in rows for name in apex)
    assert all(row[name] == "" for row in plain_rows for name in apex)
    others = lambda log: [{k: v for k, v in row.items() if k not in apex} for row in log]  # noqa: E731
    assert others(rows) == others(plain_rows)
    assert weights.keys() == plain_weights.keys() and all(torch.equal(weights[k], plain_weights[k]) for k in weights)
    assert summary["mean_over_steps"] == pytest.approx({name: sum(float(row[name]) for row in rows) / len(rows)
                                                        for name in apex}, rel=1e-12)
    assert {name: summary["final"][name] for name in apex} == pytest.approx({name: float(rows[-1][name])
                                                                             for name in apex}, rel=1e-12)
    assert plain["mean_over_steps"] == {} and all(name not in plain["final"] for name in apex)


def test_geometry_and_losses_stay_float32_under_autocast():
    model, batch = _model("poinclip"), _batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        img = model.encode_image(batch["images"])
        terms = model.loss(batch)
    assert img.dtype == torch.float32 and terms["loss"].dtype == torch.float32
    assert torch.isfinite(terms["loss"]) and torch.isfinite(terms["entailment"])
    terms["loss"].backward()


def _grid_metrics(metrics_dir, experiment, recalls, cifar100):
    """Metric JSONs of one grid model: COCO recalls (t2i R@5, R@10, i2t R@5, R@10) and CIFAR-100 accuracy."""
    for task, metrics in (("ret_coco", dict(zip(("t2i_r5", "t2i_r10", "i2t_r5", "i2t_r10"), recalls))),
                          ("zs_cifar100", {"mean_per_class_accuracy": cifar100})):
        path = metrics_dir / experiment / f"{task}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"experiment": experiment, "task": task, "scale": "smoke", "metrics": metrics,
                                    "provenance": {"config_hash": "h", "git_commit": "c", "date": "d"}}))


@pytest.mark.parametrize("reading, score", [
    ("caption", (27.0 + 13.0) / 2),  # mean(mean(10, 20, 30, 48) = 27, CIFAR-100 13) = 20
    ("text", 27.0),  # the COCO recalls' mean alone
])
def test_table4_grid_score_on_a_hand_worked_case_for_each_reading(tmp_path, reading, score):
    spec_path = tmp_path / "replication" / "poinclip.yaml"
    spec_path.parent.mkdir()
    spec_path.write_text((REPO / "replication" / "poinclip.yaml").read_text().replace(
        "        reading: caption\n", f"        reading: {reading}\n"))
    spec = load_spec(spec_path, REPO / "expected")
    assert spec.tables["table4"].columns["grid_score"].reading == reading
    _grid_metrics(tmp_path / "metrics", "poin_grid_lambda_reg_0_1_lambda_0_1", (10.0, 20.0, 30.0, 48.0), 13.0)
    frame = compare_table(spec, "table4", tmp_path / "metrics", "smoke").set_index("row")
    assert frame.loc["lambda_reg_0_1_lambda_0_1", "ours"] == pytest.approx(score, abs=1e-12)
    assert set(frame.drop("lambda_reg_0_1_lambda_0_1")["reason"]) == {"not run yet"}  # the other 24 models


def test_table4_defaults_to_the_captions_reading_and_declares_the_texts():
    column = load_all_specs(REPO / "replication", REPO / "expected")["poinclip"].tables["table4"].columns["grid_score"]
    recalls = Mean(tuple(Measure("ret_coco", metric) for metric in ("t2i_r5", "t2i_r10", "i2t_r5", "i2t_r10")))
    assert column.readings == {"caption": Mean((recalls, Measure("zs_cifar100", "mean_per_class_accuracy"))),
                               "text": recalls}
    assert column.reading == "caption" and column.term == column.readings["caption"]


def test_without_the_entailment_term_lambda_reg_is_inert(tmp_path):
    """Table 4's lambda = 0 column prints one score for every lambda_reg: those runs train the same bits here too."""
    shards = _shards(tmp_path / "data")
    states = []
    for lambda_reg in (0.0, 1.0):
        exp = {"id": f"g{lambda_reg}", "method": "poinclip", "backbone": "vit_s16", "seed": 0,
               "overrides": {"entail_weight": 0, "lambda_reg": lambda_reg}}
        train(exp, TINY, TRAIN_CFG, shards, tmp_path / exp["id"], progress=False)
        states.append(torch.load(tmp_path / exp["id"] / "checkpoint.pt", weights_only=True)["model"])
    assert all(torch.equal(states[0][key], states[1][key]) for key in states[0])
