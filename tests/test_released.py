"""Released MERU/HyCoCLIP checkpoints load into our models with the same outputs; wrong keys are named."""

import pytest
import torch

from hypvl.errors import InputError
from hypvl.models.released import import_released

from test_models import TINY, _batch, _model

# the reference repositories' names for a 1-block ViT and a 1-layer text transformer (MERU models.py)
REFERENCE_TEXT = ["textual.token_embed.weight", "textual.posit_embed", "textual.ln_final.weight",
                  "textual.ln_final.bias", "textual.attn_mask"] + [
    f"textual.resblocks.0.{name}" for name in
    ("ln_1.weight", "ln_1.bias", "attn.in_proj_weight", "attn.in_proj_bias", "attn.out_proj.weight",
     "attn.out_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
     "mlp.c_proj.weight", "mlp.c_proj.bias")]


def reference_state(model) -> dict:
    """Our weights under the reference code's names, written out independently of the importer."""
    ours = model.state_dict()
    text = {"textual.token_embed.weight": "textual.transformer.token_embedding.weight",
            "textual.posit_embed": "textual.transformer.positional_embedding",
            "textual.ln_final.weight": "textual.transformer.ln_final.weight",
            "textual.ln_final.bias": "textual.transformer.ln_final.bias"}
    state = {}
    for key in REFERENCE_TEXT:
        if key == "textual.attn_mask":
            state[key] = torch.ones(12, 12, dtype=torch.bool).triu(1)
        elif key in text:
            state[key] = ours[text[key]]
        else:
            state[key] = ours[key.replace("textual.", "textual.transformer.transformer.")]
    for key, value in ours.items():
        if key.startswith("visual.vit."):
            state["visual." + key[len("visual.vit."):]] = value
        elif not key.startswith("textual."):
            state[key] = value
    return state


@pytest.mark.parametrize("method", ["clip", "meru", "hycoclip"])
def test_released_checkpoint_gives_the_same_embeddings(tmp_path, method):
    model = _model(method).eval()
    torch.save({"model": reference_state(model), "iteration": 10}, tmp_path / "released.pth")
    imported = import_released(tmp_path / "released.pth", method, "vit_s16", TINY)
    batch = _batch()
    assert torch.equal(imported.encode_image(batch["images"]), model.encode_image(batch["images"]))
    assert torch.equal(imported.encode_text(batch["tokens"]), model.encode_text(batch["tokens"]))


def test_wrong_keys_are_named(tmp_path):
    state = reference_state(_model("meru"))
    state["textual.token_embedding.weight"] = state.pop("textual.token_embed.weight")
    torch.save({"model": state}, tmp_path / "bad.pth")
    with pytest.raises(InputError, match=r"bad\.pth.*missing keys \['textual.transformer.token_embedding.weight'\]"):
        import_released(tmp_path / "bad.pth", "meru", "vit_s16", TINY)
    torch.save({"optimizer": {}}, tmp_path / "nomodel.pth")
    with pytest.raises(InputError, match=r"no 'model' entry.*optimizer"):
        import_released(tmp_path / "nomodel.pth", "meru", "vit_s16", TINY)
    with pytest.raises(InputError, match="not found"):
        import_released(tmp_path / "absent.pth", "meru", "vit_s16", TINY)
