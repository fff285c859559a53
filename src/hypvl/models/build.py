"""Build a model from an experiment (method, backbone, overrides) and the scale's architecture table."""

from importlib import import_module

from hypvl.errors import InputError
from hypvl.methods import METHODS, built

from .encoders import ImageEncoder, TextConfig, TextEncoder, VitConfig


def model_class(method: str) -> type:
    """The model class of built method `method` (hypvl.methods), imported here, when a model is built."""
    module, _, name = METHODS[method].model.partition(":")
    return getattr(import_module(module), name)


def backbone_config(model_cfg: dict, backbone: str) -> dict:
    """The config's `model.backbones[backbone]` (patch, width, depth, heads); an unknown one is an InputError."""
    backbones = model_cfg["backbones"]
    if backbone not in backbones:
        raise InputError(f"backbone {backbone!r} is not in the config's model.backbones ({sorted(backbones)})")
    return backbones[backbone]


def build_model(method: str, backbone: str, model_cfg: dict, overrides: dict | None = None):
    """A freshly initialised model; `model_cfg` is the config's `model` section."""
    if method not in built():
        raise InputError(f"unknown method {method!r}; known: {sorted(built())}")
    vit = VitConfig(image_size=model_cfg["image_size"], **backbone_config(model_cfg, backbone))
    text = TextConfig(**model_cfg["text"])
    overrides = overrides or {}
    kwargs = {k: v for k, v in overrides.items() if k in METHODS[method].overrides}
    embed_dim = overrides.get("embed_dim", model_cfg["embed_dim"])
    visual = ImageEncoder(vit, overrides.get("pos_embed", "sincos"))
    return model_class(method)(visual, TextEncoder(text), embed_dim, **kwargs)
