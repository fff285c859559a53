"""Released MERU/HyCoCLIP checkpoints load into our models with the same outputs; wrong keys are named."""

import pytest
import torch

from helpers.models import TINY, _batch, _model
from helpers.released import reference_state
from hypvl.errors import InputError
from hypvl.outside.released import import_released


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
