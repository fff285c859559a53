"""Checkpoints: the model's state dict (learned scalars in log space) plus what is needed to rebuild it.

Every experiment's model ends as one: trained by the suite (the recipe names method, backbone and the scale's
`model` config) or imported from outside (the recipe names the library and its config; `hypvl.models.library`).
"""

from pathlib import Path

import torch

from hypvl.errors import InputError, listed
from hypvl.io import atomic_write
from hypvl.provenance import record_digest

from .build import build_model
from .skeleton import skeleton

ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since PyTorch 1.6
PICKLE_PROTOCOL = b"\x80"  # the legacy format: a bare pickle (protocol 2 and later)
RECIPE_KEYS = ("method", "backbone", "model_cfg")  # a model of ours; a library's names its `library` instead


def save_checkpoint(path: Path, model, recipe: dict, step: int, radial_root: torch.Tensor | None = None) -> None:
    """Write ``{"model": state_dict, "recipe": {method, backbone, overrides, model_cfg}, "step"}`` atomically, plus
    the (D,) entailment root evaluation is to use where a radial fine-tuning gives one (`radial_root`). A parameter
    holding a number that is not finite (a run that diverged) is an InputError: no such checkpoint is written."""
    broken = [name for name, param in model.named_parameters() if not torch.isfinite(param).all()]
    if broken:
        raise InputError(f"{path}: not written: parameters {listed(broken)} hold numbers that are not finite (the run "
                         "diverged)")
    blob = {"model": model.state_dict(), "recipe": recipe, "step": step}
    if radial_root is not None:
        blob["radial_root"] = radial_root.detach().cpu()
    with atomic_write(path, "wb") as handle:
        torch.save(blob, handle)
    record_digest(path)  # its evaluation jobs read the sha256 they record rather than hash the file again


def check_weights(state: dict, own: dict, parameters, source: str) -> None:
    """InputError naming `source` and the keys (a few, and a count of the rest) where `state` holds a tensor the
    model `own` (its state dict) holds as floating point in another dtype that is not floating point (int8 or bool
    weights would be cast to numbers silently), or a parameter (of the names in `parameters`) whose numbers are
    not all finite."""
    integral = [f"{key} ({value.dtype})" for key, value in state.items()
                if key in own and own[key].is_floating_point() and not value.is_floating_point()]
    if integral:
        raise InputError(f"{source}: weights of integer or boolean type where the model has floating point ones: "
                         f"{listed(integral)}; refused (quantised or corrupt weights are not this model's)")
    broken = [key for key in parameters if key in state and not torch.isfinite(state[key]).all()]
    if broken:
        raise InputError(f"{source}: weights hold numbers that are not finite (NaN or infinity): {listed(broken)}")


def load_state(model, state: dict, source: str, assign: bool = False) -> None:
    """Load `state` strictly; a missing or unexpected key, a tensor of another shape than the model's, or weights
    `check_weights` refuses, is an error naming the keys (a few, and a count of the rest) and both shapes. With
    `assign` the tensors take the parameters' place (a model built by `skeleton.parameters_on_meta`), cast to the
    model's floating point types as copying would."""
    if not isinstance(state, dict):
        raise InputError(f"{source}: the model state is a {type(state).__name__}, not a dict of tensors")
    own = model.state_dict()
    wrong = [f"{key} has shape {tuple(value.shape)}, the model expects {tuple(own[key].shape)}"
             for key, value in state.items()
             if key in own and (not isinstance(value, torch.Tensor) or value.shape != own[key].shape)]
    if wrong:
        raise InputError(f"{source}: checkpoint does not fit the model: {listed(wrong, 3)}")
    check_weights(state, own, dict(model.named_parameters()), source)
    if assign:
        state = {key: value.to(own[key].dtype) if key in own and own[key].is_floating_point() else value
                 for key, value in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False, assign=assign)
    if missing or unexpected:
        missing, unexpected = (listed(map(repr, sorted(keys))) for keys in (missing, unexpected))
        raise InputError(f"{source}: checkpoint does not fit the model: missing keys [{missing}], unexpected keys "
                         f"[{unexpected}]")


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


def build_from_recipe(recipe, source) -> torch.nn.Module:
    """A freshly initialised model of the architecture `recipe` describes (ours: method, backbone, overrides,
    model_cfg; a library's: library and its config); InputError names `source` (the file the recipe came from) when
    it describes none."""
    if isinstance(recipe, dict) and "library" in recipe:
        from .library_import import build_library_model

        return build_library_model(recipe, str(source))
    if isinstance(recipe, dict) and "model_class" in recipe:  # a plug-in's (hypvl.methods, register_model)
        from hypvl.methods import build_registered

        return build_registered(recipe, str(source))
    if not isinstance(recipe, dict) or any(key not in recipe for key in RECIPE_KEYS):
        raise InputError(f"{source}: the checkpoint's recipe must be a mapping with {', '.join(RECIPE_KEYS)} "
                         "(or a library's)")
    try:
        return build_model(recipe["method"], recipe["backbone"], recipe["model_cfg"], recipe.get("overrides"))
    except (InputError, KeyError, TypeError) as exc:
        raise InputError(f"{source}: the checkpoint's recipe does not build a model ({exc})") from None


def describe(recipe: dict) -> str:
    """A recipe's model in a few words: its method, backbone and data, or its library and source."""
    if not isinstance(recipe, dict):
        return "no recipe"
    fine_tuned = (recipe.get("fine_tuning") or {}).get("method")
    parts = [fine_tuned, recipe.get("method") or recipe.get("library"), recipe.get("backbone"), recipe.get("data"),
             recipe.get("source")]
    return ", ".join(str(part) for part in parts if part) or "an unnamed model"


def check_identity(recipe, path, expected) -> None:
    """InputError naming both when the checkpoint at `path` holds the model of another experiment than `expected`
    (one id, or a collection of the ids or sources that name the model wanted): a checkpoint copied or linked into
    another experiment's place is never used as that experiment's model. A recipe naming no experiment (a file
    written by hand) passes."""
    wanted = [expected] if isinstance(expected, str) else list(expected)
    named = recipe.get("experiment") if isinstance(recipe, dict) else None
    if named is None or named in wanted or (isinstance(recipe, dict) and recipe.get("source") in wanted):
        return
    raise InputError(f"{path}: holds the model of experiment {named!r} ({describe(recipe)}), not of {wanted[0]!r}: "
                     "refused (a checkpoint copied into another experiment's place?)")


def load_checkpoint(path: Path, model_of=None):
    """Rebuild the model saved at `path` in eval mode; returns it and its recipe (ours: method, backbone,
    overrides, model_cfg, experiment, data; a library's: library and its config, experiment, source). With `model_of`
    (an experiment id, or the ids and sources naming the model wanted) a checkpoint of another experiment is refused
    (`check_identity`) before any weight is loaded. A checkpoint holding a `radial_root` (a fine-tuning that learned
    or fixed its entailment root, `hypvl.train.radial`) sets the model's `radial_root`, which evaluation uses as the
    root."""
    blob = read_checkpoint(path, ("model", "recipe"))
    recipe = blob["recipe"]
    if model_of is not None:
        check_identity(recipe, path, model_of)
    model = skeleton(lambda: build_from_recipe(recipe, path))  # no random initialisation for the weights to replace
    assign = model is not None
    if not assign:
        model = build_from_recipe(recipe, path)
    load_state(model, blob["model"], str(path), assign=assign)
    if blob.get("radial_root") is not None:
        model.radial_root = blob["radial_root"]
    return model.eval(), recipe
