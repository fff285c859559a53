"""Where an experiment's weights come from: its `source` (train | released:<name> | pretrained:<hub id>) resolved
against the weights manifest `weights.yaml`. Declarations only (no torch), so the workflow plans without it.

An outside source resolves to one manifest entry (`released:<name>`, or `<library>:<hub id>` with the library
that loads it) and one folder under the config's weights folder: what a download leaves, what a smoke stand-in
is written as, and what the import step reads.
"""

import fnmatch
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from hypvl.acquire.manifest import load_sources
from hypvl.errors import InputError
from hypvl.methods import LIBRARIES
from hypvl.yaml_text import safe_load

WEIGHTS_MANIFEST = Path(__file__).with_name("weights.yaml")
KINDS = ("train", "released", "pretrained")
ARCHITECTURES = ("clip", "align")  # transformers' model types of the public dual encoders


def source_kind(source: str) -> str:
    """`train`, `released` or `pretrained`."""
    kind = source.split(":", 1)[0]
    if kind not in KINDS or (kind != "train" and not source[len(kind) + 1:]):
        raise InputError(f"source {source!r} is not train, released:<name> or pretrained:<hub id>")
    return kind


@dataclass(frozen=True)
class OutsideWeights:
    """The manifest entry an outside source resolves to.

    entry: its name in the manifest (`hypvl acquire` fetches it); folder: its folder under the weights
    folder; library: what loads it and architecture: what it is (None for a MERU/HyCoCLIP checkpoint);
    files: the files it holds (glob patterns for a Hub snapshot); checkpoint: the released checkpoint's file.
    """

    source: str
    entry: str
    folder: str
    library: str | None
    architecture: str | None
    files: tuple[str, ...]
    checkpoint: str | None = None

    def unrecognised(self, folder: Path) -> list[str]:
        """The files under `folder` (hidden ones and the records of its fetch aside) the entry does not list."""
        from hypvl.acquire.fetch import RECORDS  # only here: planning reads this module and needs no download code

        found = [path.relative_to(folder).as_posix() for path in Path(folder).rglob("*")
                 if path.is_file() and not any(part.startswith(".") for part in path.relative_to(folder).parts)]
        return sorted(name for name in found if name not in RECORDS
                      and not any(fnmatch.fnmatchcase(name, pattern) for pattern in self.files))


@cache
def _manifest(path: Path) -> tuple[dict, dict]:
    """(pretrained, entries) of the weights manifest at `path`: {hub id: {library, architecture}} and the
    acquire entries."""
    entries = load_sources(path)
    pretrained = safe_load(Path(path).read_text()).get("pretrained") or {}
    for hub_id, declared in pretrained.items():
        if (not isinstance(declared, dict) or declared.get("library") not in LIBRARIES
                or declared.get("architecture") not in ARCHITECTURES):
            raise InputError(f"{path}: pretrained.{hub_id} needs library ({', '.join(LIBRARIES)}) and "
                             f"architecture ({', '.join(ARCHITECTURES)}), not {declared!r}")
    return pretrained, entries


def weights_manifest(path: Path = WEIGHTS_MANIFEST) -> dict:
    """The manifest's entries: {name: acquire entry}."""
    return _manifest(Path(path))[1]


def outside_weights(source: str, library: dict | None = None, path: Path = WEIGHTS_MANIFEST) -> OutsideWeights:
    """The manifest entry `source` resolves to; `library` maps hub ids to the library that loads them (config
    `weights.library`), over the manifest's defaults. InputError names the source when nothing serves it (a
    hub id the manifest does not know, a library without an entry for it)."""
    pretrained, entries = _manifest(Path(path))
    kind = source_kind(source)
    if kind == "train":
        raise InputError(f"source {source!r}: trained by the suite, no weights to obtain")
    name = source.split(":", 1)[1]
    chosen = architecture = None
    if kind == "pretrained":
        if name not in pretrained:
            raise InputError(f"source {source!r}: {path} does not know the model {name!r} (it knows "
                             f"{', '.join(sorted(pretrained))})")
        chosen = (library or {}).get(name, pretrained[name]["library"])
        architecture = pretrained[name]["architecture"]
        if chosen not in LIBRARIES:
            raise InputError(f"source {source!r}: config weights.library.{name} is {chosen!r}, not one of "
                             f"{', '.join(LIBRARIES)}")
    entry = source if kind == "released" else f"{chosen}:{name}"
    if entry not in entries:
        known = sorted(key for key in entries if key.startswith(entry.split(":", 1)[0] + ":"))
        raise InputError(f"source {source!r}: {path} has no entry {entry!r} (it has {', '.join(known)})")
    listed = entries[entry]
    if "hf_snapshot" in listed:
        files = tuple(listed["hf_snapshot"].get("allow_patterns") or ("*",))
    else:
        files = tuple(item["path"] for item in listed.get("files", ()))
    if kind == "released" and len(files) != 1:
        raise InputError(f"{path}: entry {entry!r} must list exactly one checkpoint file")
    return OutsideWeights(source, entry, entry.replace(":", "/", 1), chosen, architecture, files,
                          files[0] if kind == "released" else None)
