"""Models: each method's embedding, ensembling, similarity and loss against the papers' equations."""

import math
import re

import numpy as np
import pytest
import torch
import yaml
from torch.utils._python_dispatch import TorchDispatchMode

from helpers import REPO
from helpers.models import TINY, _batch, _model
from hypvl.config import DEFAULT_CONFIG
from hypvl.errors import InputError
from hypvl.geometry import lorentz
from hypvl.losses.contrastive import HCC_TERMS
from hypvl.losses.entailment import HCE_TERMS
from hypvl.models.build import build_model
from hypvl.models.checkpoints import load_checkpoint, save_checkpoint
from hypvl.models.encoders import longest_text, sincos_2d_position_embedding


def test_clip_loss_is_symmetric_infonce_on_cosine_logits():
    model, batch = _model("clip"), _batch()
    img = torch.nn.functional.normalize(model.image_features(batch["images"]), dim=-1)
    txt = torch.nn.functional.normalize(model.text_features(batch["tokens"]), dim=-1)
    logits = img @ txt.T / 0.07
    target = torch.arange(4)
    expected = 0.5 * (torch.nn.functional.cross_entropy(logits, target)
                      + torch.nn.functional.cross_entropy(logits.T, target))
    assert model.loss(batch)["loss"].item() == pytest.approx(expected.item(), rel=1e-5)


def test_meru_lifts_scaled_features_and_adds_the_entailment_term():
    model, batch = _model("meru"), _batch()
    assert model.visual_alpha.exp().item() == pytest.approx(8 ** -0.5)
    assert model.curvature.item() == pytest.approx(1.0)
    x = model.image_features(batch["images"]) * 8 ** -0.5
    y = model.text_features(batch["tokens"]) * 8 ** -0.5
    # exp map at the origin (MERU Eq. 4 on space components) written out: sinh(|x|) x / |x| at c = 1
    img = torch.sinh(x.norm(dim=-1, keepdim=True)) * x / x.norm(dim=-1, keepdim=True)
    txt = torch.sinh(y.norm(dim=-1, keepdim=True)) * y / y.norm(dim=-1, keepdim=True)
    assert torch.allclose(model.encode_image(batch["images"]), img, atol=1e-5)
    # d_L = acosh(-<x,y>_L) with the time components recomputed
    inner = img @ txt.T - torch.sqrt(1 + (img ** 2).sum(-1, keepdim=True)) * torch.sqrt(1 + (txt ** 2).sum(-1))[None, :]
    dist = torch.acosh(torch.clamp(-inner, min=1 + 1e-7))
    target = torch.arange(4)
    logits = -dist / 0.07
    contrastive = 0.5 * (torch.nn.functional.cross_entropy(logits, target)
                         + torch.nn.functional.cross_entropy(logits.T, target))
    angle = lorentz.oxy_angle(txt, img, 1.0)
    entail = torch.clamp(angle - lorentz.half_aperture(txt, 1.0), min=0).mean()
    terms = model.loss(batch)
    assert terms["contrastive"].item() == pytest.approx(contrastive.item(), rel=1e-4)
    assert terms["loss"].item() == pytest.approx(contrastive.item() + 0.2 * entail.item(), rel=1e-4)


def test_hycoclip_loss_is_hcc_plus_gamma_hce_and_terms_can_be_removed():
    batch = _batch(boxes=True)
    full = _model("hycoclip").loss(batch)
    assert full["loss"].item() == pytest.approx(full["contrastive"].item() + 0.1 * full["entailment"].item(),
                                                rel=1e-5)
    no_box_contrast = _model("hycoclip", hcc_terms=[t for t in HCC_TERMS if t != "boxi2t"]).loss(batch)
    assert no_box_contrast["contrastive"].item() != pytest.approx(full["contrastive"].item())
    assert no_box_contrast["entailment"].item() == pytest.approx(full["entailment"].item())
    no_t_i = _model("hycoclip", hce_terms=[t for t in HCE_TERMS if t != "t_i"]).loss(batch)
    assert no_t_i["entailment"].item() < full["entailment"].item()


def test_prompt_ensembling_follows_each_method():
    feats = torch.randn(3, 5, 8)
    clip = _model("clip")
    expected = torch.nn.functional.normalize(torch.nn.functional.normalize(feats, dim=-1).mean(1), dim=-1)
    assert torch.allclose(clip.ensemble_prompts(feats), expected)
    meru = _model("meru")
    expected = lorentz.exp_map0(feats.mean(1) * 8 ** -0.5, 1.0)
    assert torch.allclose(meru.ensemble_prompts(feats), expected)


def test_scalars_are_clamped_to_the_papers_ranges():
    model = _model("meru")
    with torch.no_grad():
        model.logit_scale.fill_(10.0)
        model.curv.fill_(5.0)
        model.visual_alpha.fill_(1.0)
    model.clamp_scalars()
    # temperature >= ~0.01 at the public code's literal 4.6052 (MERU meru/models.py), not ln 100 = 4.605170
    assert model.logit_scale.item() == torch.tensor(4.6052).item() != torch.tensor(math.log(100)).item()
    assert model.curvature.item() == pytest.approx(10.0)  # c in [0.1, 10] for c0 = 1
    assert model.visual_alpha.item() == 0.0


def test_fixed_curvature_is_not_learned():
    model = _model("meru", curv_init=0.3, learn_curv=False)
    assert not model.curv.requires_grad and model.curvature.item() == pytest.approx(0.3)


def _meru_sincos(grid: int, width: int) -> np.ndarray:
    """MERU's formula (`build_timm_vit`) computed independently in float64: the grid meshed 'ij' with the first
    axis first, features [sin, cos] of the first axis then of the second, patches numbered row-major as timm's."""
    quarter = width // 4
    omega = 10000.0 ** -(np.arange(quarter) / quarter)
    out = np.zeros((grid * grid, width))
    for row in range(grid):
        for col in range(grid):
            patch = row * grid + col
            out[patch] = np.concatenate([np.sin(row * omega), np.cos(row * omega), np.sin(col * omega),
                                         np.cos(col * omega)])
    return out


def test_sincos_embedding_is_fixed_and_in_merus_order():
    for grid, width in [(2, 8), (3, 16), (14, 384)]:
        pos = sincos_2d_position_embedding(grid, width)
        assert np.allclose(pos.double().numpy(), _meru_sincos(grid, width), atol=1e-5)
    # by hand, grid 2, width 8 (frequencies 1 and 1/100): patch 1 is row 0, column 1, so its row features
    # (the first half) are those of 0 and its column features those of 1
    pos = sincos_2d_position_embedding(2, 8)
    assert torch.allclose(pos[1], torch.tensor([0.0, 0.0, 1.0, 1.0, math.sin(1), math.sin(0.01), math.cos(1),
                                                math.cos(0.01)]))
    model = _model("clip")
    assert not model.visual.vit.pos_embed.requires_grad
    assert torch.equal(model.visual.vit.pos_embed[0, 1:], sincos_2d_position_embedding(2, 16))
    assert not model.visual.vit.pos_embed[0, 0].any()  # the CLS token's is zero


def test_checkpoint_round_trip_and_wrong_keys(tmp_path):
    model = _model("hycoclip")
    recipe = {"method": "hycoclip", "backbone": "vit_s16", "overrides": {}, "model_cfg": TINY, "experiment": "x"}
    save_checkpoint(tmp_path / "c.pt", model, recipe, step=3)
    loaded, got = load_checkpoint(tmp_path / "c.pt")
    assert got == recipe
    batch = _batch()
    assert torch.equal(loaded.encode_image(batch["images"]), model.eval().encode_image(batch["images"]))
    blob = torch.load(tmp_path / "c.pt", weights_only=True)
    blob["model"]["bogus"] = blob["model"].pop("curv")
    torch.save(blob, tmp_path / "bad.pt")
    with pytest.raises(InputError, match=r"bad\.pt.*missing keys \['curv'\].*unexpected keys \['bogus'\]"):
        load_checkpoint(tmp_path / "bad.pt")
    blob = torch.load(tmp_path / "c.pt", weights_only=True)
    blob["model"]["curv"] = torch.zeros(2, 3)
    torch.save(blob, tmp_path / "shape.pt")
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'shape.pt'}: checkpoint does not fit the model: "
                                                   "curv has shape (2, 3), the model expects ()")):
        load_checkpoint(tmp_path / "shape.pt")


@pytest.mark.parametrize("content, problem", [
    (b"", "empty file (0 bytes), not a checkpoint"),
    (b"not a checkpoint", "not a PyTorch checkpoint (neither a zip archive nor a pickle; it starts with b'not '"),
    (b"PK\x03\x04 truncated", "not a readable checkpoint (RuntimeError: "),
], ids=["empty", "text", "truncated_zip"])
def test_a_file_that_is_no_checkpoint_says_what_it_is(tmp_path, content, problem):
    path = tmp_path / "c.pt"
    path.write_bytes(content)
    with pytest.raises(InputError, match=re.escape(f"{path}: {problem}")):
        load_checkpoint(path)


def test_paper_scale_models_build_from_the_full_config():
    """Randomly initialised ViT-S/16 + 12-layer width-512 text encoder, as MERU and HyCoCLIP configure them."""
    default = yaml.safe_load(DEFAULT_CONFIG.read_text())["model"]
    full = yaml.safe_load((REPO / "workflows/config/full.yaml").read_text())["model"]
    model = build_model("hycoclip", "vit_s16", {**default, **full})
    visual = sum(p.numel() for p in model.visual.parameters() if p.requires_grad)
    text = sum(p.numel() for p in model.textual.parameters())
    assert 21.0e6 < visual < 22.5e6  # ViT-S/16: ~21.7M ("about 22M", HyCoCLIP App. D)
    assert 62.5e6 < text < 63.5e6  # CLIP's 12-layer width-512 text transformer, 49408-token vocabulary: ~63.2M
    assert model.visual_proj.weight.shape == (512, 384) and model.textual_proj.weight.shape == (512, 512)
    with torch.no_grad():
        out = model.encode_image(torch.rand(1, 3, 224, 224))
    assert out.shape == (1, 512)


def test_meru_lorentz_inner_variant_puts_the_inner_product_in_the_contrastive_loss():
    model, batch = _model("meru", contrastive_similarity="lorentz_inner"), _batch()
    img, txt = model.encode_image(batch["images"]), model.encode_text(batch["tokens"])
    # Eq. 1 with the time components sqrt(1/c + |x|^2) at c = 1, over the temperature 0.07
    inner = img @ txt.T - torch.sqrt(1 + (img ** 2).sum(-1, keepdim=True)) * torch.sqrt(1 + (txt ** 2).sum(-1))[None, :]
    target = torch.arange(4)
    expected = 0.5 * (torch.nn.functional.cross_entropy(inner / 0.07, target)
                      + torch.nn.functional.cross_entropy(inner.T / 0.07, target))
    terms = model.loss(batch)
    assert terms["contrastive"].item() == pytest.approx(expected.item(), rel=1e-4)
    assert terms["contrastive"].item() != pytest.approx(_model("meru").loss(batch)["contrastive"].item(), rel=1e-3)
    with pytest.raises(InputError, match="contrastive_similarity 'cosine' is not one of neg_distance, lorentz_inner"):
        _model("meru", contrastive_similarity="cosine")


@pytest.mark.parametrize("method, overrides", [
    ("meru", {"contrastive_similarity": "lorentz_inner"}),
    ("meru", {"contrastive_similarity": "lorentz_inner", "learn_curv": False}),
    ("clip", {"pos_embed": "learned"}),
    ("clip", {}),
])
def test_gradients_reach_exactly_the_trainable_parameters(method, overrides):
    model = _model(method, **overrides)
    model.loss(_batch())["loss"].backward()
    trainable = {name for name, param in model.named_parameters() if param.requires_grad}
    reached = {name for name, param in model.named_parameters() if param.grad is not None and param.grad.any()}
    assert reached == trainable
    assert ("visual.vit.pos_embed" in trainable) == (overrides.get("pos_embed") == "learned")
    if method == "meru":
        assert ("curv" in trainable) == overrides.get("learn_curv", True)


def test_learned_position_embedding_is_a_trained_parameter_initialised_as_timm():
    from hypvl.train.optim import param_groups

    learned, fixed = _model("clip", pos_embed="learned"), _model("clip")
    pos = learned.visual.vit.pos_embed
    assert pos.requires_grad and not fixed.visual.vit.pos_embed.requires_grad
    # timm's truncated normal, std 0.02, cut at +-2: not the sin-cos table
    assert pos.abs().max().item() <= 2.0 and 0.01 < pos.std().item() < 0.03
    assert not torch.allclose(pos[0, 1:], sincos_2d_position_embedding(2, 16))

    def optimised(model):
        return {id(p) for group in param_groups(model, 0.2) for p in group["params"]}

    assert id(pos) in optimised(learned) and id(fixed.visual.vit.pos_embed) not in optimised(fixed)
    with pytest.raises(InputError, match="pos_embed 'rope' is not one of sincos, learned"):
        _model("clip", pos_embed="rope")


def test_learned_position_embedding_survives_a_checkpoint(tmp_path):
    model = _model("clip", pos_embed="learned")
    recipe = {"method": "clip", "backbone": "vit_s16", "overrides": {"pos_embed": "learned"}, "model_cfg": TINY}
    save_checkpoint(tmp_path / "c.pt", model, recipe, 1)
    loaded, _ = load_checkpoint(tmp_path / "c.pt")
    assert loaded.visual.vit.pos_embed.requires_grad
    assert torch.equal(loaded.visual.vit.pos_embed, model.visual.vit.pos_embed)


def test_longest_text_counts_the_columns_holding_any_token():
    tokens = torch.tensor([[49406, 5, 49407, 0, 0, 0], [49406, 7, 8, 9, 49407, 0]])
    assert longest_text(tokens) == 5
    assert longest_text(torch.zeros(2, 6, dtype=torch.long)) == 1


def _plain_text_transformer(text):
    """open_clip's own text transformer (no causal hint) holding `text`'s weights: the oracle of its features."""
    from open_clip.transformer import TextTransformer

    layers = len(text.transformer.transformer.resblocks)
    plain = TextTransformer(context_length=text.context_length, vocab_size=text.transformer.vocab_size,
                            width=text.width, heads=text.transformer.transformer.resblocks[0].attn.num_heads,
                            layers=layers, output_dim=None, proj_type="none", pool_type="argmax")
    plain.load_state_dict(text.transformer.state_dict())
    return plain


def _texts(context, lengths):
    tokens = torch.zeros(len(lengths), context, dtype=torch.long)
    for row, length in enumerate(lengths):
        tokens[row, :length] = torch.randint(1, 49000, (length,))
        tokens[row, 0], tokens[row, length - 1] = 49406, 49407
    return tokens


def test_text_features_ignore_the_padding_columns_they_skip():
    """The causal text transformer run on the batch's used columns gives the EOT features of open_clip's own
    full-context forward (padding after every EOT cannot reach it), and does run on fewer columns."""
    torch.manual_seed(0)
    text = _model("clip").eval().textual
    tokens = _texts(text.context_length, (4, 9, 6))
    seen = []
    hook = text.transformer.transformer.register_forward_pre_hook(lambda module, args: seen.append(args[0].shape[1]))
    with torch.no_grad():
        trimmed = text(tokens)
        full = _plain_text_transformer(text)(tokens)
    hook.remove()
    assert seen == [9]
    torch.testing.assert_close(trimmed, full, rtol=0, atol=1e-6)


class _AttentionCalls(TorchDispatchMode):
    """Records the aten scaled-dot-product attention calls (forward and backward) with their arguments by name."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if "scaled_dot_product" in str(func):
            named = dict(zip((argument.name for argument in func._schema.arguments), args))
            self.calls.append((str(func), named | (kwargs or {})))
        return func(*args, **(kwargs or {}))


def test_text_attention_runs_causal_without_a_mask_tensor_and_gives_open_clips_features_and_gradients():
    """Every text block attends with PyTorch's causal flag and no mask tensor, forward and backward (open_clip's
    own blocks pass the mask tensor, which the flash kernels cannot take), at open_clip's features and gradients."""
    torch.manual_seed(0)
    text = _model("clip").textual
    plain = _plain_text_transformer(text)
    tokens = _texts(text.context_length, (5, 12, 7))
    with _AttentionCalls() as ours:
        pooled = text(tokens)
        pooled.square().sum().backward()
    with _AttentionCalls() as reference:
        plain(tokens).square().sum().backward()
    layers = len(text.transformer.transformer.resblocks)
    assert len(ours.calls) == len(reference.calls) == 2 * layers  # one forward and one backward call per block
    assert all(named["is_causal"] is True and named.get("attn_mask") is None for _, named in ours.calls), ours.calls
    assert all(named.get("attn_mask") is not None for _, named in reference.calls), reference.calls
    torch.testing.assert_close(pooled, plain(tokens), rtol=0, atol=1e-6)
    for (name, ours_param), reference_param in zip(text.transformer.named_parameters(), plain.parameters()):
        torch.testing.assert_close(ours_param.grad, reference_param.grad, rtol=1e-5, atol=1e-6, msg=name)
