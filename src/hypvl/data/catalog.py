"""Catalog of the zero-shot classification datasets (MERU Tables 2, 6 and 8).

One YAML file per dataset in the package folder `hypvl/data/catalog/`, named `<name>.yaml`, gives
the test split as MERU defines it, its size, the class names, the prompt templates (`{}` marks the
class name; MERU's Table 8, and under `clip_prompts` CLIP's where MERU changed them), the chance level
and where the data comes from. Named prompt sets used beyond one dataset (CLIP's 80 ImageNet templates)
live in `catalog/prompt_sets/<name>.yaml`. Files are validated when loaded; a malformed file raises
`InputError` naming the file and the offending field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from hypvl.data.splits import SplitSlice, parse_split
from hypvl.errors import InputError
from hypvl.yaml_text import error_parts, safe_load

CATALOG_DIR = Path(__file__).with_name("catalog")
SOURCE_KINDS = ("tfds", "torchvision", "imagefolder")
LAYOUTS = ("imagefolder", "clip_benchmark_wds")
METRICS = ("mean_per_class_accuracy",)
PLACEHOLDER = "{}"
PROMPT_SET_DIR = "prompt_sets"  # folder of named prompt sets, e.g. CLIP's 80 ImageNet templates
FIELDS = (
    "name", "display_name", "source", "split", "test_size", "num_classes", "chance", "metric",
    "manual_download", "class_names", "prompts", "layout", "notes", "linear_probe",
)
PROBE_SPLITS = ("train", "val")  # keys of `linear_probe`
OPTIONAL_FIELDS = ("clip_prompts",)
# prompt sets a zero-shot evaluation can use (experiment override `eval_prompts`): MERU's Table 8 prompts, or
# CLIP's (Radford et al. 2021), which MERU Table 5 evaluates its CLIP baseline's development path with
PROMPT_SETS = ("meru", "clip")


@dataclass(frozen=True)
class DatasetSource:
    """Where the images come from: `kind` is tfds | torchvision | imagefolder; `name` is the tfds
    builder name, the torchvision dataset class, or the folder under the evaluation data root."""

    kind: str
    name: str


@dataclass(frozen=True)
class ManualDownload:
    """Whether the files must be fetched by hand (licence or dead URL), and how."""

    required: bool
    instructions: str


@dataclass(frozen=True)
class DatasetInfo:
    """One evaluation dataset. `chance` is 100 / num_classes, in percent (the papers' units);
    `class_names[i]` names label i; every entry of `prompts` (MERU's) and `clip_prompts` (CLIP's, the same
    where MERU kept them) holds exactly one `{}`; `path` is the YAML file the entry was read from.
    `linear_probe` holds MERU's train and val slices of the source splits for the linear probe
    (`meru/evaluation/catalog.py` SPLITS), or None where MERU has none."""

    name: str
    display_name: str
    source: DatasetSource
    split: str
    test_size: int
    num_classes: int
    chance: float
    metric: str
    manual_download: ManualDownload
    class_names: tuple[str, ...]
    prompts: tuple[str, ...]
    clip_prompts: tuple[str, ...]
    layout: str
    notes: str
    linear_probe: tuple[SplitSlice, SplitSlice] | None
    path: Path

    @property
    def probe_splits(self) -> dict[str, SplitSlice]:
        """{"train", "val", "test"} -> the source slice each linear-probe split is built from."""
        if self.linear_probe is None:
            raise InputError(f"{self.path}: {self.name} has no linear-probe splits")
        return dict(zip((*PROBE_SPLITS, "test"), (*self.linear_probe, parse_split(self.split, str(self.path)))))
    def templates(self, prompt_set: str = "meru") -> tuple[str, ...]:
        """The prompt templates of `prompt_set` (one of PROMPT_SETS)."""
        if prompt_set not in PROMPT_SETS:
            raise InputError(f"unknown prompt set {prompt_set!r} (known: {', '.join(PROMPT_SETS)})")
        return self.prompts if prompt_set == "meru" else self.clip_prompts


def dataset_names(catalog_dir: Path | None = None) -> list[str]:
    """Names of all datasets in the catalog (the YAML file stems), sorted."""
    return sorted(p.stem for p in Path(catalog_dir or CATALOG_DIR).glob("*.yaml"))


def load_dataset_info(name: str, catalog_dir: Path | None = None) -> DatasetInfo:
    """Load and validate `<catalog_dir>/<name>.yaml`; an unknown name lists the known ones."""
    return _load(name, Path(catalog_dir or CATALOG_DIR).resolve())


def prompts_for(name: str, class_name: str, catalog_dir: Path | None = None) -> list[str]:
    """The dataset's prompt templates filled with `class_name`, in catalog order."""
    info = load_dataset_info(name, catalog_dir)
    return [template.replace(PLACEHOLDER, class_name) for template in info.prompts]


def load_prompt_set(name: str, catalog_dir: Path | None = None) -> tuple[str, ...]:
    """The templates of prompt set `<catalog_dir>/prompt_sets/<name>.yaml` (fields name, notes, prompts)."""
    folder = Path(catalog_dir or CATALOG_DIR) / PROMPT_SET_DIR
    path = folder / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.yaml")))
        raise InputError(f"unknown prompt set {name!r}; {folder} holds: {known}")
    try:
        record = safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML: {error_parts(path, error)[1]}") from None
    if not isinstance(record, dict) or set(record) != {"name", "notes", "prompts"} or record["name"] != name:
        raise InputError(f"{path}: expected the fields name (= {name!r}), notes and prompts")
    prompts = record["prompts"]
    if not isinstance(prompts, list) or not prompts or not all(_is_template(p) for p in prompts):
        raise InputError(f"{path}: prompts must be a non-empty list, each holding exactly one {PLACEHOLDER}")
    return tuple(prompts)


@lru_cache(maxsize=None)
def _load(name: str, catalog_dir: Path) -> DatasetInfo:
    path = catalog_dir / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(dataset_names(catalog_dir))
        raise InputError(f"unknown dataset {name!r}; the catalog {catalog_dir} holds: {known}")
    try:
        record = safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML: {error_parts(path, error)[1]}") from None
    return _parse(record, path)


def _is_template(prompt) -> bool:
    """True for a string holding exactly one `{}` and no other brace."""
    return (isinstance(prompt, str) and prompt.count(PLACEHOLDER) == 1
            and not {"{", "}"} & set(prompt.replace(PLACEHOLDER, "")))


def _parse(record, path: Path) -> DatasetInfo:
    """Check every field of one catalog record and build its DatasetInfo."""

    def fail(message: str):
        raise InputError(f"{path}: {message}")

    if not isinstance(record, dict):
        fail("expected a mapping of fields at the top level")
    missing = [f for f in FIELDS if f not in record]
    unknown = sorted(set(record) - set(FIELDS) - set(OPTIONAL_FIELDS))
    if missing or unknown:
        fail(f"missing fields {missing}, unknown fields {unknown}")

    def typed(field: str, kind: type, value):
        """`value` of `field`, which must be of type `kind` (a bool is not accepted as an int)."""
        is_bool = isinstance(value, bool)
        if not isinstance(value, kind) or (is_bool and kind is not bool):
            fail(f"field {field!r} must be {kind.__name__}, got {value!r}")
        return value

    if record["name"] != path.stem:
        fail(f"name {record['name']!r} does not match the file name {path.stem!r}")
    source = typed("source", dict, record["source"])
    if set(source) != {"kind", "name"} or source["kind"] not in SOURCE_KINDS:
        fail(f"source must be {{kind: one of {SOURCE_KINDS}, name: str}}, got {source!r}")
    manual = typed("manual_download", dict, record["manual_download"])
    if set(manual) != {"required", "instructions"}:
        fail(f"manual_download must have keys required and instructions, got {sorted(manual)}")
    typed("manual_download.required", bool, manual["required"])
    if manual["required"] and not str(manual["instructions"] or "").strip():
        fail("manual_download.required is true but no instructions are given")

    num_classes = typed("num_classes", int, record["num_classes"])
    if num_classes < 2:
        fail(f"num_classes must be at least 2, got {num_classes}")
    class_names = typed("class_names", list, record["class_names"])
    bad_names = [c for c in class_names if not isinstance(c, str) or not c.strip()]
    if bad_names:
        fail(f"class_names must be non-empty strings (quote numbers), got {bad_names[:5]!r}")
    if num_classes != len(class_names):
        fail(f"num_classes is {num_classes} but class_names has {len(class_names)} entries")
    prompts = typed("prompts", list, record["prompts"])
    clip_prompts = typed("clip_prompts", list, record.get("clip_prompts", prompts))
    for field_name, templates in (("prompts", prompts), ("clip_prompts", clip_prompts)):
        bad_prompts = [p for p in templates if not _is_template(p)]
        if not templates or bad_prompts:
            fail(f"every entry of {field_name} must hold exactly one {PLACEHOLDER} and no other braces, "
                 f"got {bad_prompts or templates!r}")
    chance = record["chance"]
    is_number = isinstance(chance, (int, float)) and not isinstance(chance, bool)
    if not is_number or not math.isclose(chance, 100 / num_classes, abs_tol=5e-5):
        fail(f"chance {chance!r} is not 100/num_classes = {100 / num_classes:.4f}")
    if record["metric"] not in METRICS:
        fail(f"metric must be one of {METRICS}, got {record['metric']!r}")
    if record["layout"] not in LAYOUTS:
        fail(f"layout must be one of {LAYOUTS}, got {record['layout']!r}")
    if typed("test_size", int, record["test_size"]) <= 0:
        fail(f"test_size must be positive, got {record['test_size']}")

    probe = record["linear_probe"]
    if probe is not None and (not isinstance(probe, dict) or set(probe) != set(PROBE_SPLITS)):
        fail(f"linear_probe must be null or {{train: slice, val: slice}}, got {probe!r}")
    parse_split(record["split"], f"{path}: split")
    return DatasetInfo(
        name=record["name"],
        display_name=typed("display_name", str, record["display_name"]),
        source=DatasetSource(kind=source["kind"], name=typed("source.name", str, source["name"])),
        split=typed("split", str, record["split"]),
        test_size=record["test_size"],
        num_classes=num_classes,
        chance=float(chance),
        metric=record["metric"],
        manual_download=ManualDownload(required=manual["required"],
                                       instructions=str(manual["instructions"] or "")),
        class_names=tuple(class_names),
        prompts=tuple(prompts),
        clip_prompts=tuple(clip_prompts),
        layout=record["layout"],
        notes=typed("notes", str, record["notes"]),
        linear_probe=None if probe is None else tuple(
            parse_split(probe[key], f"{path}: linear_probe.{key}") for key in PROBE_SPLITS),
        path=path,
    )
