"""The evaluation interface on our own models (the wrapped library models: tests/training/test_library.py): each offers
its tokenizer at its context length, its input size, and as text parameters exactly its text tower, the text
projection and the text-side learned scale where it has one."""

import pytest
import torch

from helpers.models import TINY, _model
from hypvl.methods import built


@pytest.mark.parametrize("method", built())
def test_our_models_offer_their_tokenizer_input_size_and_text_parameters(method):
    model = _model(method)
    tokens = model.tokenizer(["a photo of a cat", ""])
    assert tokens.shape == (2, TINY["text"]["context_length"]) and tokens[0, 0] == 49406
    assert model.image_size == TINY["image_size"]
    assert model.encode_image(torch.rand(2, 3, model.image_size, model.image_size)).shape[0] == 2
    text = {name for name, _ in model.named_parameters()
            if name.startswith(("textual.", "textual_proj.")) or name == "textual_alpha"}
    assert {id(p) for p in model.text_parameters()} == {id(p) for n, p in model.named_parameters() if n in text}
    assert ("textual_alpha" in text) == (method != "clip")  # the hyperbolic models scale their text features
