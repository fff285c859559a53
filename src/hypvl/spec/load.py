"""Loading `replication/<paper>.yaml`: the YAML is validated against `SPEC_SCHEMA`, then every table is built and
cross-checked against its expected CSV (`hypvl.spec.build_table`); experiment ids are unique across papers."""

from pathlib import Path

from hypvl.errors import NUMBER_LIMIT, InputError, non_finite
from hypvl.spec.build_table import build_table
from hypvl.spec.document import read_yaml, schema_problems
from hypvl.spec.paper import SEED_MARK, Experiment, PaperSpec
from hypvl.spec.schema import SPEC_SCHEMA


def _experiment(experiment_id: str, entry: dict) -> Experiment:
    """Build an Experiment from its validated YAML mapping."""
    return Experiment(
        id=experiment_id,
        method=entry["method"],
        backbone=entry["backbone"],
        data=entry["data"],
        boxes=entry.get("boxes", False),
        source=entry["source"],
        seed=entry.get("seed", 0),
        overrides=dict(entry.get("overrides", {})),
        note=entry.get("note", ""),
    )


def default_expected_dir(spec_path) -> Path:
    """`expected/` beside the folder holding the spec: replication/x.yaml -> expected/."""
    return Path(spec_path).resolve().parent.parent / "expected"


def load_spec(path, expected_dir=None) -> PaperSpec:
    """Load and validate `replication/<paper>.yaml`; expected CSVs are read from `expected_dir/<paper>/`.

    Rows and columns come back in the expected CSV's printed order. InputError names the YAML file
    and the offending key.
    """
    path = Path(path)
    expected_dir = Path(expected_dir) if expected_dir is not None else default_expected_dir(path)
    document = read_yaml(path)
    problems = schema_problems(SPEC_SCHEMA, document)
    if problems:
        raise InputError(f"{path}: invalid replication spec: " + "; ".join(problems))
    number = non_finite(document, limit=NUMBER_LIMIT)  # YAML reads a 400-digit tolerance as an exact integer
    if number is not None:
        raise InputError(f"{path}: {number}: not a finite number within ±{NUMBER_LIMIT:g}")
    paper = document["paper"]
    if paper != path.stem:
        raise InputError(f"{path}: paper: {paper!r} does not match the file name {path.name!r}")
    experiments = {key: _experiment(key, entry) for key, entry in document["experiments"].items()}
    marked = sorted(key for key in experiments if SEED_MARK in key)
    if marked:
        raise InputError(f"{path}: experiments.{marked[0]}: {SEED_MARK!r} is reserved for seed variants")
    tables = {
        name: build_table(path, name, entry, expected_dir, paper, experiments)
        for name, entry in document["tables"].items()
    }
    return PaperSpec(paper=paper, title=document["title"], path=path, experiments=experiments, tables=tables,
                     name=document.get("name", paper))


def load_all_specs(replication_dir, expected_dir=None) -> dict[str, PaperSpec]:
    """Load every `*.yaml` under `replication_dir`, keyed by paper; experiment ids must be unique across papers."""
    specs = {}
    owner = {}
    for path in sorted(Path(replication_dir).glob("*.yaml")):
        spec = load_spec(path, expected_dir)
        for experiment_id in spec.experiments:
            if experiment_id in owner:
                raise InputError(
                    f"{path}: experiments.{experiment_id}: id already declared in {owner[experiment_id]}"
                )
            owner[experiment_id] = path
        specs[spec.paper] = spec
    if not specs:
        raise InputError(f"{replication_dir}: no replication specs (*.yaml)")
    return specs
