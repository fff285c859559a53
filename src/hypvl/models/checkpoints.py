"""Checkpoints: the model's state dict (learned scalars in log space) plus what is needed to rebuild it."""

from pathlib import Path

import torch

from hypvl.errors import InputError
from hypvl.io import atomic_write

from .build import build_model


def save_checkpoint(path: Path, model, recipe: dict, step: int) -> None:
    """Write ``{"model": state_dict, "recipe": {method, backbone, overrides, model_cfg}, "step"}`` atomically."""
    with atomic_write(path, "wb") as handle:
        torch.save({"model": model.state_dict(), "recipe": recipe, "step": step}, handle)


def load_state(model, state: dict, source: str) -> None:
    """Load `state` strictly; a missing or unexpected key is an error naming the keys."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise InputError(f"{source}: checkpoint does not fit the model: missing keys {sorted(missing)}, "
                         f"unexpected keys {sorted(unexpected)}")


def read_checkpoint(path: Path, required=("model",)) -> dict:
    """The dict saved at `path`, loaded weights only (no pickled code); it must hold the `required` keys."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: checkpoint not found")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for a damaged or non-checkpoint file
        raise InputError(f"{path}: not a readable checkpoint ({exc})") from exc
    if not isinstance(blob, dict):
        raise InputError(f"{path}: a checkpoint is a dict, this holds a {type(blob).__name__}")
    for key in required:
        if key not in blob:
            raise InputError(f"{path}: checkpoint has no {key!r} entry (keys: {sorted(blob)})")
    return blob


def load_checkpoint(path: Path):
    """Rebuild the model saved at `path` in eval mode; returns it and its recipe (method, backbone,
    overrides, model_cfg, experiment)."""
    blob = read_checkpoint(path, ("model", "recipe"))
    recipe = blob["recipe"]
    model = build_model(recipe["method"], recipe["backbone"], recipe["model_cfg"], recipe.get("overrides"))
    load_state(model, blob["model"], str(path))
    return model.eval(), recipe
