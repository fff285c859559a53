"""Released MERU/HyCoCLIP checkpoints built independently of our model code, for the released-weights tests."""

import torch


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
