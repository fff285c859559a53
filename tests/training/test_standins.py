"""Smoke stand-ins: a model of ours (or a trained library stand-in) written in an outside source's real on-disk
layout is read back by the very import the real files take, and gives the same embeddings (bitwise for the
MERU/HyCoCLIP layout, 1e-6 through open_clip's differently ordered arithmetic)."""

import pytest
import torch
from open_clip.tokenizer import SimpleTokenizer

from helpers.models import TINY, _model
from helpers.released import REFERENCE_TEXT, reference_state as independent_reference_state
from hypvl.errors import InputError
from hypvl.io import OUTPUTS
from hypvl.models.checkpoints import load_checkpoint, save_checkpoint
from hypvl.models.library_import import import_library_model
from hypvl.outside.released import import_released
from hypvl.outside.standins import (
    open_clip_layout,
    standin_model,
    wordpiece_vocabulary,
    write_open_clip,
    write_released,
    write_transformers,
)

SMOKE = {**TINY, "image_size": 32, "backbones": {"vit_s16": {"patch": 8, "width": 32, "depth": 2, "heads": 2}}}
TEXTS = ["a red cube left of a blue ball", "two dogs", "", "an unseen word: xylophone", "A RED CUBE!"]


def ours(method, tmp_path, config=TINY):
    """A checkpoint of our `method` with random weights (and, for CLIP, a nonzero patch bias to fold)."""
    torch.manual_seed(0)
    from hypvl.models.build import build_model

    model = build_model(method, "vit_s16", config).eval()
    with torch.no_grad():
        model.visual.vit.patch_embed.proj.bias.normal_()
    path = tmp_path / f"{method}.pt"
    save_checkpoint(path, model, {"method": method, "backbone": "vit_s16", "overrides": {}, "model_cfg": config},
                    step=0)
    return model, path


def batch(size=16):
    return torch.rand(4, 3, size, size, generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize("method", ["clip", "meru", "hycoclip"])
def test_a_released_stand_in_is_the_reference_layout_and_imports_bitwise(tmp_path, method):
    model, checkpoint = ours(method, tmp_path)
    write_released(checkpoint, tmp_path / "released", "model.pth")
    saved = torch.load(tmp_path / "released" / "model.pth", weights_only=True)
    assert set(saved) == {"model"}
    assert set(saved["model"]) == set(independent_reference_state(model))  # the reference names, mask included
    assert set(REFERENCE_TEXT) <= set(saved["model"])
    imported = import_released(tmp_path / "released" / "model.pth", method, "vit_s16", TINY)
    tokens = model.tokenizer(TEXTS)
    assert torch.equal(imported.encode_image(batch()), model.encode_image(batch()))
    assert torch.equal(imported.encode_text(tokens), model.encode_text(tokens))


def test_an_open_clip_stand_in_computes_what_our_clip_computes(tmp_path):
    model, checkpoint = ours("clip", tmp_path, SMOKE)
    write_open_clip(checkpoint, tmp_path / "laion")
    assert sorted(p.name for p in (tmp_path / "laion").iterdir()) == [OUTPUTS, "open_clip_config.json",
                                                                      "open_clip_pytorch_model.bin"]
    wrapped = import_library_model(tmp_path / "laion", "open_clip", "pretrained:laion/x")
    with torch.no_grad():
        assert torch.allclose(wrapped.encode_image(batch(32)), model.encode_image(batch(32)), atol=1e-6)
        assert torch.allclose(wrapped.trunk_features(batch(32)), model.trunk_features(batch(32)), atol=1e-5)
        assert torch.equal(wrapped.tokenizer(TEXTS), model.tokenizer(TEXTS))
        assert torch.allclose(wrapped.encode_text(wrapped.tokenizer(TEXTS)), model.encode_text(model.tokenizer(TEXTS)),
                              atol=1e-6)
    assert wrapped.logit_scale.item() == model.logit_scale.item()


def test_only_a_clip_converts_to_open_clip(tmp_path):
    with pytest.raises(InputError, match="converts a CLIP, not a MERU"):
        open_clip_layout(_model("meru"))
    _, checkpoint = ours("meru", tmp_path)
    with pytest.raises(InputError, match=r"meru\.pt: an open_clip stand-in converts a CLIP"):
        write_open_clip(checkpoint, tmp_path / "laion")
    assert not (tmp_path / "laion").exists()


@pytest.mark.parametrize("architecture", ["clip", "align"])
def test_a_transformers_stand_in_is_written_and_read_as_transformers_does(tmp_path, architecture):
    torch.manual_seed(0)
    model = standin_model(architecture, SMOKE, "vit_s16", TEXTS * 3).eval()
    save_checkpoint(tmp_path / "standin.pt", model, {**model.recipe(), "experiment": "e"}, step=0)
    write_transformers(tmp_path / "standin.pt", tmp_path / "hub")
    imported = import_library_model(tmp_path / "hub", "transformers", "pretrained:x")
    assert imported.model.config.model_type == architecture and imported.image_size == 32
    tokens = model.tokenizer(TEXTS)
    assert torch.equal(imported.tokenizer(TEXTS), tokens)
    with torch.no_grad():
        assert torch.equal(imported.encode_image(batch(32)), model.encode_image(batch(32)))
        assert torch.equal(imported.encode_text(tokens), model.encode_text(tokens))
        assert model.loss({"images": batch(32)[:2], "tokens": tokens[:2]})["loss"].isfinite()  # one embedding width
    with pytest.raises(InputError, match="written from a transformers model, not a CLIP"):
        write_transformers(ours("clip", tmp_path)[1], tmp_path / "other")


def test_the_clip_stand_in_tokenizes_as_open_clip_does():
    """transformers' tokenizer built from open_clip's vocabulary: the same ids up to the end of text."""
    tokenizer = standin_model("clip", SMOKE, "vit_s16").tokenizer
    ids, reference = tokenizer(TEXTS), SimpleTokenizer(context_length=12)(TEXTS)
    ends = reference.argmax(dim=1)
    for row, end in enumerate(ends):
        assert torch.equal(ids[row, :end + 1], reference[row, :end + 1])


def test_a_bert_stand_in_vocabulary_is_reproducible_and_spells_unseen_words():
    vocab = wordpiece_vocabulary(TEXTS * 2)
    assert vocab == wordpiece_vocabulary(list(reversed(TEXTS)) * 2)  # counts and spelling decide, not order
    assert list(vocab)[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert {"red", "cube", "##x", "x"} <= set(vocab) and "xylophones" not in vocab
    from transformers import BertTokenizer

    pieces = BertTokenizer(vocab=vocab).tokenize("Zebras xylophones 42!")
    assert "[UNK]" not in pieces and pieces[:2] == ["z", "##e"]


def test_a_stand_in_checkpoint_rebuilds_from_its_recipe(tmp_path):
    model = standin_model("align", SMOKE, "vit_s16", TEXTS).eval()
    save_checkpoint(tmp_path / "a.pt", model, {**model.recipe(), "experiment": "e"}, step=0)
    rebuilt, recipe = load_checkpoint(tmp_path / "a.pt")
    assert recipe["library"] == "transformers" and recipe["experiment"] == "e"
    with torch.no_grad():
        assert torch.equal(rebuilt.encode_image(batch(32)), model.encode_image(batch(32)))
