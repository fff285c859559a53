"""Checkpoints: the model's state dict (learned scalars in log space) plus what is needed to rebuild it.

Every experiment's model ends as one: trained by the suite (the recipe names method, backbone and the scale's
`model` config) or imported from outside (the recipe names the library and its config; `hypvl.models.library`).
"""

from pathlib import Path

import torch

from hypvl.errors import InputError
from hypvl.io import atomic_write

from .build import build_model

ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since PyTorch 1.6
PICKLE_PROTOCOL = b"\x80"  # the legacy format: a bare pickle (protocol 2 and later)
RECIPE_KEYS = ("method", "backbone", "model_cfg")  # a model of ours; a library's names its `library` instead


def save_checkpoint(path: Path, model, recipe: dict, step: int) -> None:
    """Write ``{"model": state_dict, "recipe": {method, backbone, overrides, model_cfg}, "step"}`` atomically."""
    with atomic_write(path, "wb") as handle:
        torch.save({"model": model.state_dict(), "recipe": recipe, "step": step}, handle)


def load_state(model, state: dict, source: str) -> None:
    """Load `state` strictly; a missing or unexpected key, or a tensor of another shape than the model's, is an
    error naming the keys (and both shapes)."""
    if not isinstance(state, dict):
        raise InputError(f"{source}: the model state is a {type(state).__name__}, not a dict of tensors")
    own = model.state_dict()
    wrong = [f"{key} has shape {tuple(value.shape)}, the model expects {tuple(own[key].shape)}"
             for key, value in state.items()
             if key in own and (not isinstance(value, torch.Tensor) or value.shape != own[key].shape)]
    if wrong:
        raise InputError(f"{source}: checkpoint does not fit the model: {'; '.join(wrong)}")
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise InputError(f"{source}: checkpoint does not fit the model: missing keys {sorted(missing)}, "
                         f"unexpected keys {sorted(unexpected)}")


def read_checkpoint(path: Path, required=("model",)) -> dict:
    """The dict saved at `path`, loaded weights only (no pickled code); it must hold the `required` keys."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: checkpoint not found")
    with open(path, "rb") as handle:
        head = handle.read(4)
    if not head:
        raise InputError(f"{path}: empty file (0 bytes), not a checkpoint")
    if head != ZIP_MAGIC and head[:1] != PICKLE_PROTOCOL:
        raise InputError(f"{path}: not a PyTorch checkpoint (neither a zip archive nor a pickle; it starts with "
                         f"{head!r})")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a damaged or non-checkpoint file
        detail = (str(exc).strip().splitlines() or [""])[0]
        raise InputError(f"{path}: not a readable checkpoint ({type(exc).__name__}: {detail})") from exc
    if not isinstance(blob, dict):
        raise InputError(f"{path}: a checkpoint is a dict, this holds a {type(blob).__name__}")
    for key in required:
        if key not in blob:
            raise InputError(f"{path}: checkpoint has no {key!r} entry (keys: {sorted(blob)})")
    return blob


def load_checkpoint(path: Path):
    """Rebuild the model saved at `path` in eval mode; returns it and its recipe (ours: method, backbone,
    overrides, model_cfg, experiment; a library's: library and its config, experiment, source)."""
    blob = read_checkpoint(path, ("model", "recipe"))
    recipe = blob["recipe"]
    if isinstance(recipe, dict) and "library" in recipe:
        from .library import build_library_model

        model = build_library_model(recipe, str(path))
    elif not isinstance(recipe, dict) or any(key not in recipe for key in RECIPE_KEYS):
        raise InputError(f"{path}: the checkpoint's recipe must be a mapping with {', '.join(RECIPE_KEYS)} "
                         "(or a library's)")
    else:
        try:
            model = build_model(recipe["method"], recipe["backbone"], recipe["model_cfg"], recipe.get("overrides"))
        except (InputError, KeyError, TypeError) as exc:
            raise InputError(f"{path}: the checkpoint's recipe does not build a model ({exc})") from None
    load_state(model, blob["model"], str(path))
    return model.eval(), recipe
