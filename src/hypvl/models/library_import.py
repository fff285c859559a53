"""Public dual encoders imported from a folder in their library's own format (open_clip's `local-dir:` folder,
transformers' `save_pretrained` folder) by the library's own loaders, and rebuilt from a recipe without any
download (`hypvl.models.library` wraps them)."""

import contextlib
import json
import tempfile
from pathlib import Path

from hypvl.errors import InputError, listed
from hypvl.methods import LIBRARIES

from .library import (
    OPEN_CLIP_CONFIG,
    LibraryModel,
    OpenCLIPModel,
    TransformersModel,
    quiet_libraries,
    wrap_transformers,
)
from .weight_files import check_library_weights


def _library_error(source: str, folder, exc: Exception, limit: int = 400) -> InputError:
    """One line naming the source and folder and what the library said (its lines joined, shortened)."""
    detail = " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    detail = detail if len(detail) <= limit else detail[:limit] + " ..."
    return InputError(f"{source}: {folder} does not load ({type(exc).__name__}: {detail})")


def _open_clip_from_folder(folder: Path):
    """open_clip's model and tokenizer for a `local-dir:` folder (with weights, or only its config)."""
    import open_clip

    with quiet_libraries("root"):
        model = open_clip.create_model(f"local-dir:{folder}")
        tokenizer = open_clip.get_tokenizer(f"local-dir:{folder}")
    return model, tokenizer


def import_open_clip(folder: Path, source: str) -> OpenCLIPModel:
    """The open_clip model saved in `folder` (`open_clip_config.json` and its weights), as the Hub serves it."""
    folder = Path(folder)
    config_path = folder / OPEN_CLIP_CONFIG
    if not config_path.is_file():
        raise InputError(f"{source}: {folder} is not an open_clip model folder (no {OPEN_CLIP_CONFIG})")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        model, tokenizer = _open_clip_from_folder(folder)
    except Exception as exc:  # open_clip, timm and torch raise many types for a config or weights they reject
        raise _library_error(source, folder, exc) from None
    return OpenCLIPModel(model.float().eval(), tokenizer, config).eval()


# the files of a transformers folder whose `auto_map` would have transformers import the folder's own modules
CODE_MAPS = ("config.json", "tokenizer_config.json", "preprocessor_config.json", "processor_config.json")
NO_REMOTE_CODE = {"trust_remote_code": False}  # every transformers load: never the code a folder brings


def refuse_custom_code(folder: Path, source: str) -> None:
    """InputError naming the folder where it brings code of its own (an `auto_map` in its configs, a `.py` file),
    which the suite never runs: transformers would otherwise ask "run the custom code? [y/N]" at a terminal, or wait
    for an answer inside a job."""
    found = sorted(path.name for path in folder.glob("*.py"))
    for name in CODE_MAPS:
        with contextlib.suppress(OSError, ValueError):  # unreadable: transformers says so when it loads the file
            if "auto_map" in json.loads((folder / name).read_text(encoding="utf-8")):
                found.append(f"{name} (auto_map)")
    if found:
        raise InputError(f"{source}: {folder} holds code of its own ({listed(found)}); the suite never runs a model "
                         "folder's code (trust_remote_code): refused")


def _transformers_parts(folder: Path):
    """transformers' model (with its loading report), tokenizer and image processor saved in `folder`."""
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    with quiet_libraries("transformers"):
        # mismatched weights come back in the loading report (and are refused below, by name)
        model, info = AutoModel.from_pretrained(folder, output_loading_info=True, ignore_mismatched_sizes=True,
                                                **NO_REMOTE_CODE)
        return (model.float(), info, AutoTokenizer.from_pretrained(folder, **NO_REMOTE_CODE),
                AutoImageProcessor.from_pretrained(folder, **NO_REMOTE_CODE))


def import_transformers(folder: Path, source: str) -> TransformersModel:
    """The transformers model saved in `folder` (`save_pretrained` layout: config, weights, tokenizer and image
    processor files); a weight the architecture lacks, or lacks a weight for, is an error naming them."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise InputError(f"{source}: {folder} is not a transformers model folder (no config.json)")
    refuse_custom_code(folder, source)
    try:
        model, info, tokenizer, processor = _transformers_parts(folder)
    except Exception as exc:  # transformers raises many types for files it cannot use
        raise _library_error(source, folder, exc) from None
    wrong = {key: sorted(map(str, info.get(key) or ())) for key in ("missing_keys", "unexpected_keys",
                                                                     "mismatched_keys")}
    if any(wrong.values()):
        raise InputError(f"{source}: the weights in {folder} do not fit the architecture of its config.json: "
                         + "; ".join(f"{key.replace('_', ' ')} [{listed(names)}]" for key, names in wrong.items()
                                     if names))
    return wrap_transformers(model, tokenizer, processor).eval()


IMPORTERS = {"open_clip": import_open_clip, "transformers": import_transformers}


def import_library_model(folder: Path, library: str, source: str) -> LibraryModel:
    """The model in `folder`, in `library`'s on-disk format, wrapped (eval mode)."""
    if library not in IMPORTERS:
        raise InputError(f"{source}: unknown library {library!r} (known: {', '.join(LIBRARIES)})")
    wrapped = IMPORTERS[library](folder, source)
    check_library_weights(Path(folder), wrapped.model, source)
    return wrapped


def build_library_model(recipe: dict, source: str) -> LibraryModel:
    """The architecture a wrapper's recipe describes, freshly initialised: no download, no weights read."""
    library = recipe["library"]
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        try:
            if library == "open_clip":
                (scratch / OPEN_CLIP_CONFIG).write_text(json.dumps(recipe["open_clip_config"]), encoding="utf-8")
                model, tokenizer = _open_clip_from_folder(scratch)
                return OpenCLIPModel(model.float(), tokenizer, recipe["open_clip_config"])
            if library == "transformers":
                from transformers import AutoConfig, AutoImageProcessor, AutoModel, AutoTokenizer

                for name, text in recipe["files"].items():
                    if Path(name).name != name or name.startswith("."):  # a recipe writes into its scratch folder only
                        raise InputError(f"{source}: the recipe names a file {name!r}, not a file name; refused")
                    (scratch / name).write_text(text, encoding="utf-8")
                refuse_custom_code(scratch, source)
                config = dict(recipe["config"])
                config = AutoConfig.for_model(config.pop("model_type"), **config)
                with quiet_libraries("transformers"):
                    model = AutoModel.from_config(config, **NO_REMOTE_CODE).float()
                    tokenizer = AutoTokenizer.from_pretrained(scratch, **NO_REMOTE_CODE)
                    processor = AutoImageProcessor.from_pretrained(scratch, **NO_REMOTE_CODE)
                return TransformersModel(model, tokenizer, processor, recipe["files"])
        except InputError:
            raise
        except Exception as exc:  # the libraries raise many types for a config they cannot build
            raise InputError(f"{source}: the recipe's {library} config does not build a model "
                             f"({type(exc).__name__}: {exc})") from None
    raise InputError(f"{source}: unknown library {library!r} (known: {', '.join(LIBRARIES)})")

