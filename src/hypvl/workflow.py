"""What the Snakemake workflow plans: targets and inputs derived from the replication specs.

The Snakefile stays declarative; this module answers "which files does this report need?" from the
specs, the task registry and the config.
"""

import json
import shlex
from pathlib import Path

from hypvl.evaluate.tasks import group_tasks, task_group
from hypvl.replication.spec import load_all_specs, table_needs

# config sections each step reads (a rule passes only these, so unrelated edits do not rerun it)
STEP_SECTIONS = {
    "synthesize": ("smoke_world",),
    "train": ("scale", "data_dir", "corpora", "model", "train"),
    "evaluate": ("scale", "data_dir", "eval"),
}


class Plan:
    """Targets of the workflow for one config."""

    def __init__(self, config: dict):
        self.config = config
        self.scale = config["scale"]
        self.results = Path(config["results_dir"])
        self.reports = Path(config["reports_dir"])
        self.specs = load_all_specs(config["replication_dir"], config["expected_dir"])
        self.groups = group_tasks(self.scale)
        self._spec_of = {exp: spec for spec in self.specs.values() for exp in spec.experiments}

    def step_config(self, step: str) -> str:
        """The shell-quoted JSON of the config sections `step` reads."""
        return shlex.quote(json.dumps({k: self.config[k] for k in STEP_SECTIONS[step]}, sort_keys=True))

    def spec_path(self, experiment: str) -> str:
        if experiment not in self._spec_of:
            raise ValueError(f"no replication spec declares experiment {experiment!r}")
        return str(self._spec_of[experiment].path)

    def experiments(self) -> list[str]:
        return sorted(self._spec_of)

    def group_outputs(self, group: str) -> list[str]:
        """Metric JSON patterns (with an {experiment} wildcard) that one `group` job writes."""
        return [str(self.results / "metrics" / "{experiment}" / f"{task}.json") for task in self.groups[group]]

    def table_inputs(self, paper: str, table: str) -> list[str]:
        """Metric JSONs a table needs that the suite can compute; the rest are reported as missing."""
        needs = table_needs(self.specs[paper], table)
        return sorted(str(self.results / "metrics" / exp / f"{task}.json")
                      for exp, task in needs if task_group(task, self.scale) is not None)

    def tables(self) -> list[tuple[str, str]]:
        return [(paper, table) for paper, spec in sorted(self.specs.items()) for table in spec.tables]

    def report_targets(self) -> list[str]:
        return [str(self.reports / paper / f"{table}.md") for paper, table in self.tables()]
