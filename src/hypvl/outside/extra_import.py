"""An extra model (`hypvl.outside.extras`) made into a checkpoint of the suite, by the code that imports released
weights.

A folder in open_clip's or transformers' layout is loaded by the library (`library_import.import_library_model`), a
released-format file by `released.import_released`, a checkpoint of the suite by `checkpoints.load_checkpoint` (a
plug-in model class included, `hypvl.methods`). A hub id or open_clip release is first fetched into
`<data_dir>/weights/extra/<name>` as a weights entry of the manifest is (`hypvl.acquire.fetch.fetch`: the Hub commit
and every file's sha256 recorded on the first fetch and checked on later ones; config `fetch.mirror` honoured).
The model's geometry must be the one declared.
"""

from pathlib import Path

from hypvl.errors import InputError
from hypvl.outside.extras import ExtraModel

# what a fetched release's folder holds, per library (the transformers files of hypvl/outside/weights.yaml)
HUB_FILES = {
    "open_clip": ["open_clip_config.json", "open_clip_pytorch_model.bin", "open_clip_model.safetensors"],
    "transformers": ["config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json", "vocab.json",
                     "vocab.txt", "merges.txt", "special_tokens_map.json", "model.safetensors", "pytorch_model.bin"],
}


def hub_repository(extra: ExtraModel) -> str:
    """The Hub repository of a hub id or open_clip release (open_clip's pretrained table names it)."""
    if extra.kind == "transformers":
        return extra.location
    from open_clip.pretrained import get_pretrained_cfg

    architecture, _, tag = extra.location.partition("/")
    hub = (get_pretrained_cfg(architecture, tag) or {}).get("hf_hub", "")
    if not hub:
        raise InputError(f"{extra.source}: open_clip has no release {tag!r} of {architecture!r} on the Hugging Face "
                         "Hub (give a folder holding open_clip_config.json and its weights instead)")
    return hub.rstrip("/")


def fetch_extra(extra: ExtraModel, config: dict) -> Path:
    """The folder a hub id or open_clip release is fetched into (`<data_dir>/weights/extra/<name>`)."""
    from hypvl.acquire.fetch import fetch
    from hypvl.acquire.mirror import Mirror

    folder = Path(config["data_dir"]) / "weights" / "extra" / extra.name
    entry = {"hf_snapshot": {"repo": hub_repository(extra), "repo_type": "model", "revision": "main", "path": ".",
                             "allow_patterns": HUB_FILES[extra.kind]}}
    fetch(extra.source, folder, sources={extra.source: entry}, mirror=Mirror.at(config["fetch"]["mirror"]))
    return folder


def files_record(path: Path) -> dict:
    """Each file's sha256 under `path` (a file or a folder), hidden ones aside: what the checkpoint records."""
    from hypvl.provenance import file_digest

    if path.is_file():
        return {path.name: file_digest(path)}
    return {p.relative_to(path).as_posix(): file_digest(p) for p in sorted(path.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)}


def import_extra(extra: ExtraModel, config: dict):
    """(model in eval mode, recipe) of extra model `extra`; the recipe names it (experiment `extra_<name>`), its
    source, and the files it was read from with their sha256. InputError names the source when they do not load, or
    load a model of another geometry than declared."""
    from hypvl.models.checkpoints import load_checkpoint
    from hypvl.models.library_import import import_library_model
    from .released import import_released

    path = Path(extra.location) if extra.local else fetch_extra(extra, config)
    if extra.kind in ("open_clip", "transformers"):
        model = import_library_model(path, extra.kind, extra.source)
        recipe = model.recipe()
    elif extra.kind == "released-format":
        try:
            model = import_released(path, extra.method, extra.backbone, config["model"])
        except InputError as exc:
            raise InputError(f"{extra.source}: {exc}") from None
        recipe = {"method": extra.method, "backbone": extra.backbone, "overrides": {}, "model_cfg": config["model"]}
    else:
        model, recipe = load_checkpoint(path)
        recipe = {**recipe, "imported_from": recipe.get("experiment")}
    if model.geometry != extra.geometry:
        raise InputError(f"{extra.source}: holds a {model.geometry} model ({type(model).__name__}), declared "
                         f"{extra.geometry}")
    recipe.update(experiment=extra.experiment, source=extra.source,
                  weights={"path": str(path), "sha256": files_record(path), "verified": {}, "standin": False})
    return model, recipe
