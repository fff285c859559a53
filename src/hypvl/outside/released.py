"""Import released MERU / HyCoCLIP checkpoints (``torch.save({"model": state_dict, ...})``) into our models.

Both repositories name parameters the same way: a timm ViT under ``visual.`` and MERU's own text
transformer under ``textual.`` (``token_embed``, ``posit_embed``, ``resblocks.N`` with open_clip-style
``ln_1/attn/ln_2/mlp.c_fc/mlp.c_proj`` blocks, ``ln_final``, and a causal ``attn_mask`` buffer). Ours wrap
the same timm ViT and open_clip's text transformer, so importing is a renaming; the learned scalars
(``logit_scale``, ``curv``, ``visual_alpha``, ``textual_alpha``) are stored in log space in both.
"""

from pathlib import Path

import torch

from hypvl.models.build import build_model
from hypvl.models.checkpoints import check_identity, load_state, read_checkpoint

# reference-code prefix -> our prefix, first match wins
PREFIXES = (
    ("visual.", "visual.vit."),
    ("textual.token_embed.", "textual.transformer.token_embedding."),
    ("textual.posit_embed", "textual.transformer.positional_embedding"),
    ("textual.resblocks.", "textual.transformer.transformer.resblocks."),
    ("textual.ln_final.", "textual.transformer.ln_final."),
)
CAUSAL_MASK = "textual.attn_mask"  # the reference text encoder's stored causal mask; ours is rebuilt, not stored


def _renamed(state: dict[str, torch.Tensor], prefixes) -> dict[str, torch.Tensor]:
    """`state` with each key's first matching (old, new) prefix replaced."""
    renamed = {}
    for key, value in state.items():
        old, new = next(((old, new) for old, new in prefixes if key.startswith(old)), ("", ""))
        renamed[new + key[len(old):]] = value
    return renamed


def rename_reference_keys(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A MERU/HyCoCLIP `model` state dict with our parameter names."""
    return _renamed({key: value for key, value in state.items() if key != CAUSAL_MASK}, PREFIXES)


def reference_state(state: dict[str, torch.Tensor], context_length: int) -> dict[str, torch.Tensor]:
    """Our `model` state dict under the reference code's names, with its causal mask buffer (True above the
    diagonal, as MERU's text encoder registers it): what MERU and HyCoCLIP save."""
    mask = torch.ones(context_length, context_length, dtype=torch.bool).triu(1)
    return {**_renamed(state, [(new, old) for old, new in PREFIXES]), CAUSAL_MASK: mask}


def import_released(path: Path, method: str, backbone: str, model_cfg: dict, model_of=()):
    """Our model (eval mode) holding the weights of the released checkpoint at `path`.

    `method`/`backbone` name the architecture the checkpoint was trained with (e.g. meru, vit_s16) and
    `model_cfg` is the paper-scale `model` config section; a missing or unexpected key is an error
    naming the keys. A file that holds a recipe of ours (a checkpoint of the suite) must name one of `model_of`
    (the experiment id and source being imported).
    """
    blob = read_checkpoint(path)
    if "recipe" in blob and model_of:
        check_identity(blob["recipe"], path, model_of)
    model = build_model(method, backbone, model_cfg)
    load_state(model, rename_reference_keys(blob["model"]), str(path))
    return model.eval()
