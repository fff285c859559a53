"""Build a model from an experiment (method, backbone, overrides) and the scale's architecture table."""

from hypvl.errors import InputError

from .clip import CLIP
from .encoders import ImageEncoder, TextConfig, TextEncoder, VitConfig
from .hycoclip import HyCoCLIP
from .meru import MERU
from .methods import MODEL_OVERRIDES
from .poinclip import PoinCLIP
from .syntax_meru import SyntaxMERU

# keys: methods.METHOD_NAMES
METHODS = {"clip": CLIP, "meru": MERU, "hycoclip": HyCoCLIP, "poinclip": PoinCLIP, "syntax_meru": SyntaxMERU}


def backbone_config(model_cfg: dict, backbone: str) -> dict:
    """The config's `model.backbones[backbone]` (patch, width, depth, heads); an unknown one is an InputError."""
    backbones = model_cfg["backbones"]
    if backbone not in backbones:
        raise InputError(f"backbone {backbone!r} is not in the config's model.backbones ({sorted(backbones)})")
    return backbones[backbone]


def build_model(method: str, backbone: str, model_cfg: dict, overrides: dict | None = None):
    """A freshly initialised model; `model_cfg` is the config's `model` section."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; known: {sorted(METHODS)}")
    vit = VitConfig(image_size=model_cfg["image_size"], **backbone_config(model_cfg, backbone))
    text = TextConfig(**model_cfg["text"])
    overrides = overrides or {}
    kwargs = {k: v for k, v in overrides.items() if k in MODEL_OVERRIDES[method]}
    embed_dim = overrides.get("embed_dim", model_cfg["embed_dim"])
    visual = ImageEncoder(vit, overrides.get("pos_embed", "sincos"))
    return METHODS[method](visual, TextEncoder(text), embed_dim, **kwargs)
