"""The workflow configuration: the packaged default (the smoke scale, `default.yaml` beside this module),
merged with overrides (e.g. workflows/config/full.yaml), checked against the packaged `schema.yaml`.
The suite's own inputs (`replication_dir`, `expected_dir`, `baselines_dir`), where relative, are read from the
project (the checkout holding replication/ and expected/: the Snakefile's folder for the workflow; `--project`, or
found, for a command), never from the working directory; the folders the suite writes are the working directory's.

Snakemake rules hand each command the resolved config as JSON (`--config-json`: the sections its step reads, and
apart from them the RUN_SETTINGS, whose changes rerun no job); by hand, a command
takes `--configfile` paths merged over the default, as `snakemake --configfile` does. The default and
the schema ship inside the package, so `hypvl` and the Snakefile work from any directory.
"""

import argparse
import fnmatch
import json
import os
from pathlib import Path

import jsonschema
import yaml

from hypvl.errors import NUMBER_LIMIT, InputError, non_finite
from hypvl.yaml_text import MAX_VALUES, error_parts, expanded_size, safe_load, value_children

CONFIG_DIR = Path(__file__).resolve().parent
PACKAGE_DIR = CONFIG_DIR.parent
# the folder of the suite's own source: src/ of a checkout (an editable install), else the installed package
SOURCE_TREE = PACKAGE_DIR.parent if PACKAGE_DIR.parent.name == "src" else PACKAGE_DIR
OUTPUT_DIRS = ("data_dir", "results_dir", "reports_dir")  # folders the suite writes into
INPUT_DIRS = ("replication_dir", "expected_dir", "baselines_dir")  # folders of the suite's own inputs
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"
PROJECT_ENV = "HYPVL_PROJECT"  # the project's folder where neither --project nor the working directory gives one
# keys a config may no longer set -> what replaced them: an old config is told, not only that the key is unexpected
RETIRED_KEYS = {("train", "amp"): "train.precision (fp16 | bf16 | fp32; amp: true was fp16, amp: false fp32)"}
# train settings that say how a run goes, not what it computes: how often it checkpoints, whether it keeps its decoded
# corpus, what it reports as it goes. Editing them reruns no job (the workflow hands them to a job apart from the
# sections its rule tracks), a run resumes across them (hypvl.train.resume) and its numbers join the rest's in a table
# (the run config `hypvl compare` checks leaves them out)
RUN_SETTINGS = ("checkpoint_every", "cache_decoded", "telemetry")


def deep_merge(base: dict, update: dict) -> dict:
    """`base` updated recursively with `update` (nested mappings merged, everything else replaced)."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_yaml(path: Path) -> dict:
    if not path.is_file():
        raise InputError(f"{path}: config file not found")
    try:
        data = safe_load(path.read_text())
    except yaml.YAMLError as exc:
        where, problem = error_parts(path, exc)
        if isinstance(exc, yaml.constructor.ConstructorError):  # YAML, but a value hypvl refuses (yaml_text)
            raise InputError(f"{where}: {problem}") from None
        raise InputError(f"{where}: not valid YAML ({problem})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a config file must be a mapping")
    return data


def validate_config(config: dict, source: str, config_dir: Path = CONFIG_DIR) -> dict:
    """Check `config` against schema.yaml; the error names `source` and the offending key (a retired key: what
    replaced it)."""
    if expanded_size(config, value_children) is None:  # Snakemake's own YAML loader follows every alias
        raise InputError(f"{source}: its values expand to more than {MAX_VALUES} (YAML aliases: an alias bomb?); "
                         "refused")
    for (section, key), replacement in RETIRED_KEYS.items():
        if isinstance(config.get(section), dict) and key in config[section]:
            raise InputError(f"{source}: config key {section}.{key} was replaced by {replacement}")
    key = non_finite(config, limit=NUMBER_LIMIT)
    if key is not None:  # jsonschema lets NaN, infinity and a 400-digit integer through every numeric bound
        raise InputError(f"{source}: config key {key}: not a finite number within ±{NUMBER_LIMIT:g}")
    schema = _read_yaml(Path(config_dir) / "schema.yaml")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise InputError(f"{source}: config key {where}: {error.message}")
    _check_output_dirs(config, source)
    _check_pilot(config, source)
    return config


def _check_pilot(config: dict, source: str) -> None:
    """InputError where the config has a pilot world (its jobs write stand-ins into data_dir and its mirror) at
    another scale than the pilot's: `--configfile pilot.yaml full.yaml` (the wrong order) keeps pilot.yaml's world
    over full.yaml's data_dir, whose real datasets the stand-ins would be written over."""
    if config.get("pilot_world") is not None and config["scale"] != "pilot":
        raise InputError(f"{source}: config key pilot_world: the pilot world belongs to scale 'pilot', not "
                         f"{config['scale']!r} (data_dir {config['data_dir']}); refused: give full.yaml first, then "
                         "pilot.yaml (`--configfile workflows/config/full.yaml workflows/config/pilot.yaml`)")


def _check_output_dirs(config: dict, source: str) -> None:
    """InputError when a folder the suite writes into lies inside its source tree or a folder of its inputs (a
    results folder there would mix outputs with code and specs)."""
    inputs = {"the source tree": SOURCE_TREE, **{key: Path(config[key]).resolve() for key in INPUT_DIRS}}
    for key in OUTPUT_DIRS:
        folder = Path(config[key]).resolve()
        for name, inside in inputs.items():
            if folder == inside or inside in folder.parents:
                raise InputError(f"{source}: config key {key}: {config[key]} lies inside {name} ({inside}); "
                                 "choose a folder outside it")


def is_project(folder: Path) -> bool:
    """Whether `folder` holds the suite's specs and printed tables (replication/ and expected/)."""
    return (folder / "replication").is_dir() and (folder / "expected").is_dir()


def find_project(explicit=None) -> Path:
    """The project folder: `explicit` (--project), else the working directory or the nearest folder above it that is
    a project, else $HYPVL_PROJECT, else the checkout this package runs from (an editable install), else the working
    directory (whose missing specs are then the error)."""
    if explicit is not None:
        folder = Path(explicit).resolve()
        if not is_project(folder):
            raise InputError(f"--project {explicit}: not a hypvl project (no replication/ and expected/ folders)")
        return folder
    here = Path.cwd()
    named = [Path(os.environ[PROJECT_ENV])] if os.environ.get(PROJECT_ENV) else []
    for folder in (here, *here.parents, *named, SOURCE_TREE.parent):
        if is_project(folder):
            return folder
    return here


def in_project(config: dict, project) -> dict:
    """`config` with its relative input folders (specs, printed tables, baselines) made absolute under `project`."""
    return {**config, **{key: str(Path(project, config[key])) for key in INPUT_DIRS}}


def load_config(configfiles=(), config_json=(), config_dir: Path = CONFIG_DIR, project=None) -> dict:
    """The default config merged with `configfiles` in order, then with the JSON objects a rule passed, in order (a
    rule passes only the sections its step reads, so other config edits do not rerun it, and the RUN_SETTINGS
    apart); relative input folders are read from the project (`find_project(project)`)."""
    config = _read_yaml(Path(config_dir) / "default.yaml")
    for path in configfiles:
        config = deep_merge(config, _read_yaml(Path(path)))
    sources = ["default.yaml", *map(str, configfiles)]
    for text in config_json:
        try:
            sections = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise InputError(f"--config-json: not valid JSON ({exc})") from None
        if not isinstance(sections, dict):
            raise InputError(f"--config-json: must be a JSON object, not {type(sections).__name__}")
        config = deep_merge(config, sections)
        sources.append("--config-json")
    if all(isinstance(config.get(key), str) for key in INPUT_DIRS):  # else the schema names the key
        config = in_project(config, find_project(project))
    return validate_config(config, " + ".join(sources), config_dir)


def _refuse_constant(name: str):
    """json.loads' hook for NaN and Infinity, which strict JSON does not have."""
    raise InputError(f"--config-json: {name} is not a finite number")


def add_config_arguments(parser) -> None:
    """`--configfile` (repeatable), `--config-json` and `--project`, for commands that read the workflow config."""
    parser.add_argument("--configfile", action="append", default=[], help="YAML merged over the default config")
    parser.add_argument("--config-json", action="append", default=[],
                        help="config sections as JSON, merged in order (used by the workflow)")
    parser.add_argument("--project", default=None,
                        help="the checkout holding replication/, expected/ and baselines/ (default: the working "
                             f"directory or a folder above it, ${PROJECT_ENV}, or the checkout hypvl runs from)")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (thread counts, shard sizes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def steps_for(experiment_id: str, train_cfg: dict) -> dict:
    """The entries of `train.steps_for` (experiment id glob -> steps at this scale, null: the experiment's own)
    that match `experiment_id`, in config order (the last one applies)."""
    return {pattern: steps for pattern, steps in (train_cfg.get("steps_for") or {}).items()
            if fnmatch.fnmatchcase(experiment_id, pattern)}


def shared_train_settings(train_cfg: dict) -> dict:
    """The train settings every model of a run shares, as `hypvl compare` joins numbers on them: less
    `train.steps_for` (each model's own entries are compared apart) and the RUN_SETTINGS (they change no number)."""
    return {key: value for key, value in train_cfg.items() if key != "steps_for" and key not in RUN_SETTINGS}


def config_from_args(args) -> dict:
    return load_config(args.configfile, args.config_json, project=args.project)
