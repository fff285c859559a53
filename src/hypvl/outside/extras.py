"""Extra models: any checkpoint a user declares (config `extra_models`), reported beside the papers' rows.

An extra model is one of

    open_clip:<folder>                    open_clip's layout (open_clip_config.json and its weights)
    open_clip:<architecture>/<pretrained> an open_clip release (e.g. ViT-B-16/laion2b_s34b_b88k), fetched by open_clip
    transformers:<folder or hub id>       transformers' `save_pretrained` layout (CLIP, ALIGN)
    hypvl:<checkpoint.pt>                 a checkpoint of this suite (any registered model class)
    released-format:<file.pth>            MERU's or HyCoCLIP's release format (`method` and `backbone` say which)

with the geometry its embeddings live in. It is imported as a released checkpoint is (`hypvl import-extra`), evaluated
on every task group the tables it can enter need, and compared as one more row `extra__<name>` of each such table:
its numbers, never a verdict against a printed one (it is nobody's printed row). A table it cannot enter says why
(`entry_problem`). Declarations only: no torch, so the workflow plans with it.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from hypvl.errors import InputError
from hypvl.methods import METHODS, names
from hypvl.spec.paper import Experiment
from hypvl.spec.tables import TableSpec
from hypvl.spec.terms import Column

KINDS = ("open_clip", "transformers", "hypvl", "released-format")
GEOMETRIES = ("euclidean", "lorentz", "poincare")
EXTRA_EXPERIMENT = "extra_"  # an extra model's experiment id (its metric JSONs' folder): extra_<name>
EXTRA_ROW = "extra__"  # its row in a compare table: extra__<name>
NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # owner/name (transformers), architecture/tag (open_clip)


@dataclass(frozen=True)
class ExtraModel:
    """One declared extra model. kind: one of KINDS; location: its path, hub id or open_clip architecture/tag;
    method and backbone: what a released-format file holds."""

    name: str
    kind: str
    location: str
    geometry: str
    method: str | None = None
    backbone: str | None = None

    @property
    def source(self) -> str:
        return f"{self.kind}:{self.location}"

    @property
    def experiment(self) -> str:
        return EXTRA_EXPERIMENT + self.name

    @property
    def row(self) -> str:
        return EXTRA_ROW + self.name

    @property
    def local(self) -> bool:
        """True when `location` is a file or folder here (else a hub id or open_clip release, fetched)."""
        return Path(self.location).exists()

    def declared(self) -> Experiment:
        """The experiment the workflow plans for it (its source the extra's: weights from outside)."""
        return Experiment(id=self.experiment, method=self.method or "", backbone=self.backbone or "", data="",
                          boxes=False, source=self.source, seed=0)


def parse_extra(name: str, entry, where: str = "config: extra_models") -> ExtraModel:
    """The ExtraModel of one `extra_models` entry; InputError names the key and the problem."""
    where = f"{where}.{name}"
    if not NAME.match(str(name)):
        raise InputError(f"{where}: a name is lower-case letters, digits and single underscores")
    if not isinstance(entry, dict) or not isinstance(entry.get("source"), str):
        raise InputError(f"{where}: needs a `source` ({' | '.join(f'{kind}:...' for kind in KINDS)})")
    unknown = sorted(set(entry) - {"source", "geometry", "method", "backbone"})
    if unknown:
        raise InputError(f"{where}: unknown keys {unknown} (source, geometry, method, backbone)")
    kind, _, location = entry["source"].partition(":")
    if kind not in KINDS or not location:
        raise InputError(f"{where}.source: {entry['source']!r} is not <kind>:<where> with kind one of "
                         f"{', '.join(KINDS)}")
    geometry = entry.get("geometry", "euclidean" if kind in ("open_clip", "transformers") else None)
    if geometry not in GEOMETRIES:
        raise InputError(f"{where}.geometry: {geometry!r} is not one of {', '.join(GEOMETRIES)}")
    extra = ExtraModel(name, kind, location, geometry, entry.get("method"), entry.get("backbone"))
    if kind in ("open_clip", "transformers") and geometry != "euclidean":
        raise InputError(f"{where}.geometry: a {kind} model is euclidean, not {geometry}")
    if kind == "released-format":
        if extra.method not in names(released=True) or not extra.backbone:
            raise InputError(f"{where}: a released-format file needs `method` ({', '.join(names(released=True))}) and "
                             "`backbone` (a key of the config's model.backbones)")
        if METHODS[extra.method].geometry != geometry:
            raise InputError(f"{where}.geometry: a {extra.method} model is {METHODS[extra.method].geometry}, "
                             f"not {geometry}")
    elif extra.method is not None or extra.backbone is not None:
        raise InputError(f"{where}: `method` and `backbone` describe a released-format file only")
    if not extra.local and (kind in ("hypvl", "released-format") or not HUB_ID.match(location)):
        raise InputError(f"{where}.source: {location} does not exist"
                         + ("" if kind in ("hypvl", "released-format") else " (nor is it a hub id or release)"))
    return extra


def extra_models(config: dict) -> dict[str, ExtraModel]:
    """Config `extra_models` as {name: ExtraModel}."""
    declared = config.get("extra_models") or {}
    return {name: parse_extra(name, entry) for name, entry in declared.items()}


def entry_problem(table: TableSpec) -> str | None:
    """Why no extra model can be a row of `table` (one line), None where one can: the table's columns name the
    models (it is laid out the other way round), or no column is a measure the suite computes."""
    columns = [column for column in table.columns.values() if isinstance(column, Column)]
    if any(column.experiment for column in columns):
        return "its columns are models, not measures: a model is no row of it"
    if not columns:
        return "none of its columns is measured by the suite"
    return None


def extra_needs(table: TableSpec, experiment: str) -> set[tuple[str, str]]:
    """The (experiment, task) pairs an extra model's row of `table` reads (none where it cannot enter)."""
    if entry_problem(table) is not None:
        return set()
    return {(experiment, task) for column in table.columns.values() if isinstance(column, Column)
            for task in column.tasks}
