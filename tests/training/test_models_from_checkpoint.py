"""Models rebuilt from a checkpoint without their random initialisation (`hypvl.models.skeleton`): the parameters
are the checkpoint's tensors, the buffers the constructors', and the model computes what an ordinarily built and
loaded one computes, bit for bit."""

import pytest
import torch

from helpers.library import images, open_clip_folder, transformers_folder
from helpers.models import TINY, _batch
from hypvl.methods import built
from hypvl.models import checkpoints
from hypvl.models.build import build_model
from hypvl.models.checkpoints import load_checkpoint, load_state, save_checkpoint
from hypvl.models.library_import import import_library_model
from hypvl.models.skeleton import parameters_on_meta, skeleton


def _ordinary_load(path):
    """The checkpoint's model built with its random initialisation and then loaded by copying: the reference."""
    blob = torch.load(path, weights_only=True)
    model = checkpoints.build_from_recipe(blob["recipe"], path)
    load_state(model, blob["model"], str(path))
    return model.eval()


def _builds(monkeypatch):
    """The list `build_from_recipe` appends to, at each call, whether it built inside `parameters_on_meta`."""
    calls, build = [], checkpoints.build_from_recipe

    def counted(recipe, source):
        model = build(recipe, source)
        calls.append(all(p.is_meta for p in model.parameters()))
        return model

    monkeypatch.setattr(checkpoints, "build_from_recipe", counted)
    return calls


@pytest.mark.parametrize("method", sorted(built()))
def test_our_models_load_into_a_skeleton_and_compute_what_a_copied_load_computes(tmp_path, monkeypatch, method):
    torch.manual_seed(0)
    model = build_model(method, "vit_s16", TINY)
    recipe = {"method": method, "backbone": "vit_s16", "overrides": {}, "model_cfg": TINY, "experiment": "x"}
    save_checkpoint(tmp_path / "c.pt", model, recipe, step=1)
    builds = _builds(monkeypatch)
    loaded, _ = load_checkpoint(tmp_path / "c.pt")
    assert builds == [True]  # one build, every parameter on meta: no random initialisation drawn
    assert not any(t.is_meta for t in [*loaded.parameters(), *loaded.buffers()])
    reference, batch = _ordinary_load(tmp_path / "c.pt"), _batch()
    for name, param in reference.named_parameters():
        assert loaded.get_parameter(name).requires_grad == param.requires_grad, name
    for name, buffer in reference.named_buffers():  # the non-persistent ones (the causal mask) included
        assert torch.equal(loaded.get_buffer(name), buffer), name
    assert torch.equal(loaded.encode_image(batch["images"]), reference.encode_image(batch["images"]))
    assert torch.equal(loaded.encode_text(batch["tokens"]), reference.encode_text(batch["tokens"]))


@pytest.mark.parametrize("architecture", ["clip", "align"])
def test_transformers_models_load_into_a_skeleton(tmp_path, monkeypatch, architecture):
    wrapped = import_library_model(transformers_folder(tmp_path, architecture)[3], "transformers", "pretrained:t")
    save_checkpoint(tmp_path / "c.pt", wrapped, {**wrapped.recipe(), "experiment": "e"}, step=0)
    builds = _builds(monkeypatch)
    loaded, _ = load_checkpoint(tmp_path / "c.pt")
    assert builds == [True]
    tokens = wrapped.tokenizer(["a photo of a cat.", "two dogs!"])
    assert torch.equal(loaded.encode_text(tokens), wrapped.encode_text(tokens))
    assert torch.equal(loaded.encode_image(images()), wrapped.encode_image(images()))


def test_a_model_its_library_moves_while_building_is_built_the_ordinary_way(tmp_path, monkeypatch):
    wrapped = import_library_model(open_clip_folder(tmp_path)[1], "open_clip", "pretrained:t")
    save_checkpoint(tmp_path / "c.pt", wrapped, {**wrapped.recipe(), "experiment": "e"}, step=0)
    builds = _builds(monkeypatch)
    loaded, _ = load_checkpoint(tmp_path / "c.pt")
    assert builds == [False]  # open_clip's create_model moves the model to its device: meta parameters refuse
    assert torch.equal(loaded.encode_image(images()), wrapped.encode_image(images()))


def test_tied_parameters_are_not_untied():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
            self.b.weight = self.a.weight

    assert skeleton(Tied) is None
    with parameters_on_meta():
        model = Tied()
    assert model.a.weight is model.b.weight and model.a.weight.is_meta
    assert not torch.nn.Linear(2, 2).weight.is_meta  # outside the context, parameters are real again


def test_assigned_weights_take_the_models_floating_point_type(tmp_path):
    with parameters_on_meta():
        model = torch.nn.Linear(3, 2)
    state = {"weight": torch.ones(2, 3, dtype=torch.float16), "bias": torch.zeros(2, dtype=torch.float64)}
    load_state(model, state, "half.pt", assign=True)
    assert model.weight.dtype == model.bias.dtype == torch.float32 and model.weight.requires_grad
    assert torch.equal(model(torch.ones(1, 3)), torch.full((1, 2), 3.0))
