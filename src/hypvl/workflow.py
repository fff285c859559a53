"""What the Snakemake workflow plans: targets and inputs derived from the replication specs.

The Snakefile stays declarative; this module answers "which files does this report need?" from the
specs, the task registry and the config. Only jobs the suite can run are planned: an experiment it
trains with a method it implements, on a corpus the config provides, with overrides it honours, or
whose weights come from outside and can be obtained (fetched, held locally, or stood in for at smoke
scale); and a task some evaluation group computes at the scale. Every
other cell renders as missing, so every report target works now and fills in as the suite grows.
Planning imports no torch (every `snakemake` call pays for what this module imports).
"""

import json
import re
import shlex
from pathlib import Path

from hypvl.errors import InputError
from hypvl.models.methods import EVAL_OVERRIDES, METHOD_NAMES
from hypvl.models.sources import OutsideWeights, outside_weights
from hypvl.spec import Column, Experiment, load_all_specs, table_needs
from hypvl.tasks import group_tasks, task_group
from hypvl.train.recipe import resolve_schedule, stream_mode, supported_overrides

# config sections each step reads (a rule passes only these, so unrelated edits do not rerun it)
STEP_SECTIONS = {
    "synthesize": ("smoke_world",),
    "ground": ("data_dir", "spacy_model", "corpora", "grounding"),
    "train": ("scale", "cpu_code_path", "data_dir", "corpora", "model", "train"),
    "evaluate": ("scale", "cpu_code_path", "data_dir", "eval"),
    "import": ("scale", "cpu_code_path", "model", "weights"),
    "standin": ("scale", "cpu_code_path", "data_dir", "corpora", "model", "train", "weights"),
}
NO_WEIGHTS = {"local": {}, "library": {}, "standins": None}  # a config without a `weights` section (schema-checked
# configs always have one): weights from outside are fetched as the manifest says
SCHEDULE_OVERRIDES = ("steps", "batch_size")  # a trained model standing in for weights from outside has only these


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
        self.weights = config.get("weights", NO_WEIGHTS)
        self.standins = self.weights["standins"]  # None where the real weights are fetched
        self._outside = {exp: outside_weights(self.experiment(exp).source, self.weights["library"])
                         for exp in self.experiments() if self.experiment(exp).source != "train"}
        self._counterpart = self._released_counterparts()
        self._weights_folders: dict[str, str] | None = None
        for source, path in self.weights["local"].items():
            if not Path(path).exists():
                raise InputError(f"config: weights.local.{source} is {path}, which does not exist")
        self._model_of: dict[str, str] = {}
        self._first_with_recipe: dict[str, str] = {}
        for experiment in self.experiments():  # by id, so the first of a recipe serves the others
            self.model_of(experiment)
        self.with_training = tuple(config.get("evaluate_with_training", ()))
        named = {"evaluate_with_training": self.with_training,
                 **{f"regression_extras.{exp}": groups for exp, groups in config.get("regression_extras", {}).items()}}
        for key, groups in named.items():
            unknown = sorted(set(groups) - set(self.groups))
            if unknown:
                raise InputError(f"config: {key} names unknown task groups {unknown} (groups: {sorted(self.groups)})")

    def step_config(self, step: str) -> str:
        """The shell-quoted JSON of the config sections `step` reads."""
        return shlex.quote(json.dumps({k: self.config[k] for k in STEP_SECTIONS[step]}, sort_keys=True))

    def spec_path(self, experiment: str) -> str:
        """The replication spec declaring `experiment`."""
        return str(self._spec(experiment).path)

    def experiment(self, experiment: str) -> Experiment:
        """The declared Experiment called `experiment`."""
        return self._spec(experiment).experiments[experiment]

    def _spec(self, experiment: str):
        if experiment not in self._spec_of:
            raise ValueError(f"no replication spec declares experiment {experiment!r}")
        return self._spec_of[experiment]

    def experiments(self) -> list[str]:
        """Every declared experiment id, sorted."""
        return sorted(self._spec_of)

    def runnable(self, experiment: str) -> bool:
        """True when the suite trains `experiment` itself (source `train`), with a method it implements,
        on a training corpus the config provides (`corpora`), honouring every override it declares
        (an override nothing reads, e.g. an embedding width, would train some other model); or when its
        weights come from outside and can be obtained (`obtainable`)."""
        declared = self.experiment(experiment)
        if declared.source != "train":
            return self.obtainable(experiment)
        if declared.method not in METHOD_NAMES or declared.data not in self.config["corpora"]:
            return False
        start = declared.overrides.get("init_from")
        supported = set(declared.overrides) <= supported_overrides(declared.method)
        return supported and (start is None or self.runnable(start))

    def _released_counterparts(self) -> dict[str, str]:
        """Released experiment -> the trained experiment of the table rows it is mapped beside (`released`)."""
        pairs: dict[str, str] = {}
        for spec in self.specs.values():
            for table in spec.tables.values():
                for row, released in table.released.items():
                    if pairs.setdefault(released, table.rows[row]) != table.rows[row]:
                        raise InputError(f"{spec.path}: {released} is mapped beside both {pairs[released]} and "
                                         f"{table.rows[row]}")
        return pairs

    def outside(self, experiment: str) -> OutsideWeights | None:
        """Where the weights of `experiment` come from (None for a trained one)."""
        return self._outside.get(experiment)

    def obtainable(self, experiment: str) -> bool:
        """True when the weights of outside experiment `experiment` can be had: held locally (config
        `weights.local`) or fetched at a scale without stand-ins; at smoke scale, when a stand-in can be made:
        for a released checkpoint, its table row's model is trained here; for an open_clip CLIP, a CLIP of the
        mapped backbone is; a transformers model trains its own stand-in on `weights.standins.data`."""
        declared, outside = self.experiment(experiment), self.outside(experiment)
        if declared.source in self.weights["local"] or self.standins is None:
            return True
        if outside.library is None:
            counterpart = self._counterpart.get(experiment)
            return counterpart is not None and self.runnable(counterpart)
        if declared.backbone not in self.standins["backbones"]:
            return False
        if outside.library == "open_clip":
            return self.clip_counterpart(experiment) is not None
        return self.standins["data"] in self.config["corpora"]

    def clip_counterpart(self, experiment: str) -> str | None:
        """The trained CLIP converted into the open_clip stand-in of `experiment`: the first by id of the
        runnable experiments training method clip, without boxes, on the backbone `weights.standins.backbones`
        maps its backbone to, with nothing but a schedule as overrides."""
        backbone = self.standins["backbones"].get(self.experiment(experiment).backbone)
        return next((exp for exp in self.experiments() if self._plain_clip(exp, backbone) and self.runnable(exp)),
                    None)

    def _plain_clip(self, experiment: str, backbone: str | None) -> bool:
        declared = self.experiment(experiment)
        return (declared.source == "train" and declared.method == "clip" and declared.backbone == backbone
                and not declared.boxes and set(declared.overrides) <= set(SCHEDULE_OVERRIDES))

    def model_of(self, experiment: str) -> str:
        """The experiment whose model serves `experiment`: of the trained experiments with the same recipe
        (method, backbone, data, boxes, seed and overrides, `init_from` by the model it names; evaluation-only
        overrides such as `eval_prompts` are not part of a recipe), the first by id.
        PoinCLIP's CLIP and MERU rows repeat MERU's recipes and syntax-VSE's MERU row HyCoCLIP's: each such model
        is trained once and evaluated under every id. An experiment with weights from outside serves itself."""
        if experiment not in self._model_of:
            declared = self.experiment(experiment)
            if declared.source != "train":
                self._model_of[experiment] = experiment
            else:
                overrides = {k: v for k, v in declared.overrides.items() if k not in EVAL_OVERRIDES}
                if "init_from" in overrides:
                    overrides["init_from"] = self.model_of(overrides["init_from"])
                recipe = json.dumps([declared.method, declared.backbone, declared.data, declared.boxes,
                                     declared.seed, overrides], sort_keys=True)
                self._model_of[experiment] = self._first_with_recipe.setdefault(recipe, experiment)
        return self._model_of[experiment]

    def trains(self, experiment: str) -> bool:
        """True when the train rule makes the model of `experiment` (a trained experiment serving itself)."""
        return self.experiment(experiment).source == "train" and self.model_of(experiment) == experiment

    @staticmethod
    def pattern(ids) -> str:
        """Regex alternatives matching exactly `ids` (a wildcard constraint); nothing when there are none."""
        return "|".join(map(re.escape, sorted(ids))) or "(?!)"

    def trained_pattern(self, trained: bool = True) -> str:
        """The experiment ids the train rule makes (`trained`), or all the others."""
        return self.pattern(exp for exp in self.experiments() if self.trains(exp) == trained)

    def imported_pattern(self) -> str:
        """The experiment ids whose weights the import rule brings in from outside."""
        return self.pattern(exp for exp in self._outside if self.runnable(exp))

    def source_checkpoint(self, source: str) -> str:
        """The checkpoint holding the weights of outside `source` (e.g. a fine-tuning's base): that of the first
        experiment, by id, declaring it. ValueError when none does."""
        declaring = [exp for exp in self._outside if self.experiment(exp).source == source]
        if not declaring:
            raise ValueError(f"no experiment declares source {source!r}")
        return self.checkpoint(declaring[0])

    def weights_input(self, experiment: str) -> str:
        """What the import rule reads for `experiment`: the path config `weights.local` gives for its source, or
        its folder under data_dir/weights (fetched there, or a stand-in written there)."""
        source = self.experiment(experiment).source
        if source in self.weights["local"]:
            return self.weights["local"][source]
        return str(Path(self.config["data_dir"]) / "weights" / self.outside(experiment).folder)

    def weights_folders(self) -> dict[str, str]:
        """Weights folder -> the first (by id) runnable outside experiment reading it, for the folders the
        workflow makes (fetched, or stood in for)."""
        if self._weights_folders is None:
            self._weights_folders = {}
            for exp in self._outside:
                if self.experiment(exp).source not in self.weights["local"] and self.runnable(exp):
                    self._weights_folders.setdefault(self.weights_input(exp), exp)
        return self._weights_folders

    def standin_args(self, folder: str) -> list[str]:
        """The `hypvl write-standin` arguments giving the layout of weights folder `folder` (the checkpoint's
        file name, for a released one)."""
        outside = self.outside(self.weights_folders()[folder])
        named = ["--file", outside.checkpoint] if outside.checkpoint else []
        return ["--kind", outside.library or "released", *named]

    def standin_from(self, experiment: str) -> str:
        """The checkpoint the stand-in of outside `experiment` is written from: its table row's trained model
        (released), our CLIP (open_clip), or its own trained stand-in (transformers)."""
        outside = self.outside(experiment)
        if outside.library is None:
            return self.checkpoint(self.model_of(self._counterpart[experiment]))
        if outside.library == "open_clip":
            return self.checkpoint(self.model_of(self.clip_counterpart(experiment)))
        return str(self.results / "standins" / self.standin_trainer(experiment) / "checkpoint.pt")

    def _standin_recipe(self, experiment: str) -> tuple:
        declared = self.experiment(experiment)
        return self.outside(experiment).architecture, self.standins["backbones"][declared.backbone], declared.seed

    def standin_trainer(self, experiment: str) -> str:
        """The outside experiment whose name the stand-in training of `experiment` runs under: the first by id
        of those loaded by transformers with the same architecture, stand-in backbone and seed."""
        recipe = self._standin_recipe(experiment)
        return next(exp for exp in self._outside if self.outside(exp).library == "transformers"
                    and self.runnable(exp) and self._standin_recipe(exp) == recipe)

    def standin_trainings(self) -> list[str]:
        """The experiments the stand-in training rule runs under (none where the real weights are fetched)."""
        if self.standins is None:
            return []
        return sorted({self.standin_trainer(exp) for exp in self._outside
                       if self.outside(exp).library == "transformers" and self.runnable(exp)
                       and self.experiment(exp).source not in self.weights["local"]})

    def standin_inputs(self) -> list[str]:
        """What a stand-in training needs from the data stage: the smoke world's manifest and its corpus."""
        return [str(Path(self.config["data_dir"]) / "manifest.json"), self.grounded_summary(self.standins["data"])]

    def trained_corpus(self, experiment: str) -> str | None:
        """The grounded corpus `experiment` trains on, or None (weights from outside, or data that is not a
        grounded corpus, such as HierarCaps fine-tuning pairs)."""
        declared = self.experiment(experiment)
        grounded = declared.data in self.config["corpora"] and declared.data in self.config["grounding"]["raw"]
        return declared.data if declared.source == "train" and grounded else None

    def grounded_summary(self, corpus: str) -> str:
        """The file `hypvl ground` leaves when training corpus `corpus` is grounded."""
        return str(Path(self.config["data_dir"]) / self.config["corpora"][corpus] / "grounding.json")

    def raw_corpus_named(self, folder: str) -> str:
        """The corpus whose raw shards live in `folder` (config `grounding.raw.<corpus>.path`)."""
        return next(corpus for corpus, entry in self.config["grounding"]["raw"].items() if entry["path"] == folder)

    def raw_corpus_inputs(self, corpus: str) -> list[str]:
        """What grounding `corpus` needs from the data stage: at smoke scale, its synthesised raw corpus (paper-scale
        data is acquired beforehand and checked by the step)."""
        if self.scale != "smoke":
            return []
        return [str(Path(self.config["data_dir"]) / self.config["grounding"]["raw"][corpus]["path"] / "corpus.json")]

    def data_inputs(self, experiment: str | None = None) -> list[str]:
        """What a step needs from the data stage: the smoke world's manifest (paper-scale data is checked by each
        step) and, for an experiment the suite trains on a grounded corpus, that corpus's grounding summary."""
        needs = [str(Path(self.config["data_dir"]) / "manifest.json")] if self.scale == "smoke" else []
        corpus = None if experiment is None else self.trained_corpus(experiment)
        return needs if corpus is None else [*needs, self.grounded_summary(corpus)]

    def train_cost(self, experiment: str) -> float:
        """Relative cost of training `experiment`: steps x batch x the two towers' tokens x width^2 x depth,
        doubled for a method that also encodes a box per sample. The train rule's priority, so that the longest
        runs start first and the last minutes do not leave a core idle."""
        declared = self.experiment(experiment)
        schedule = resolve_schedule(declared.overrides, self.config["train"])
        model = self.config["model"]
        vit, text = model["backbones"][declared.backbone], model["text"]
        image_tokens = (model["image_size"] // vit["patch"]) ** 2 + 1
        per_sample = (image_tokens * vit["width"] ** 2 * vit["depth"]
                      + text["context_length"] * text["width"] ** 2 * text["layers"])
        boxes = 2 if stream_mode(declared.method, declared.boxes) == "compositional" else 1
        return schedule.steps * schedule.batch_size * per_sample * boxes / 1e9

    def checkpoint(self, experiment: str) -> str:
        """Where the model of `experiment` is saved."""
        return str(self.results / "models" / experiment / "checkpoint.pt")

    def init_checkpoint(self, experiment: str) -> list[str]:
        """The checkpoint an experiment starts from (its `init_from` override), if any."""
        start = self.experiment(experiment).overrides.get("init_from")
        return [] if start is None else [self.checkpoint(self.model_of(start))]

    def evaluate_args(self, group: str, experiment: str, threads: int) -> str:
        """The shell-quoted arguments of `hypvl evaluate` computing `group` on the model of `experiment` (with the
        prompt set its `eval_prompts` override names, if any)."""
        checkpoint = self.checkpoint(self.model_of(experiment))
        args = ["evaluate", group, "--experiment", experiment, "--checkpoint", checkpoint,
                "--out-dir", str(self.results / "metrics" / experiment), "--threads", str(threads)]
        prompts = self.experiment(experiment).overrides.get("eval_prompts")
        args += [] if prompts is None else ["--prompts", prompts]
        return f"{shlex.join(args)} --config-json {self.step_config('evaluate')}"

    def computable(self, task: str) -> bool:
        """True when some evaluation group computes `task` at this scale."""
        return task_group(task, self.scale) is not None

    def group_outputs(self, group: str) -> list[str]:
        """Metric JSON patterns (with an {experiment} wildcard) that one `group` job writes."""
        return [str(self.results / "metrics" / "{experiment}" / f"{task}.json") for task in self.groups[group]]

    def _metric_files(self, needs) -> list[str]:
        """Metric JSON paths of the (experiment, task) pairs the suite can produce, sorted."""
        return sorted({str(self.results / "metrics" / exp / f"{task}.json")
                       for exp, task in needs if self.runnable(exp) and self.computable(task)})

    def table_inputs(self, paper: str, table: str) -> list[str]:
        """Metric JSONs a table needs that the suite can compute; the rest are reported as missing."""
        return self._metric_files(table_needs(self.specs[paper], table))

    def row_inputs(self, paper: str, table: str, row: str) -> list[str]:
        """Metric JSONs one printed row (or a printed row's released checkpoint, `<row>__released`) needs that
        the suite can compute (empty for an external row).

        ValueError names the table's rows when `row` is not one of them.
        """
        table_spec = self.specs[paper].table(table)
        rows = table_spec.compared_rows()
        if row not in rows:
            raise ValueError(f"{paper} {table} has no row {row!r} (rows: {', '.join(rows)})")
        experiment = rows[row][1]
        if not isinstance(experiment, str):
            return []
        return self._metric_files({(experiment, task) for column in table_spec.columns.values()
                                   if isinstance(column, Column) for task in column.tasks})

    def tables(self) -> list[tuple[str, str]]:
        """(paper, table) for every table of every spec."""
        return [(paper, table) for paper, spec in sorted(self.specs.items()) for table in spec.tables]

    def compare_csvs(self) -> list[str]:
        """Every table's compare CSV: what the claims audit reads."""
        return [str(self.results / "tables" / paper / f"{table}.csv") for paper, table in self.tables()]

    def spec_files(self) -> list[str]:
        """Every replication spec (the claims audit reads the claims there)."""
        return sorted(str(spec.path) for spec in self.specs.values())

    def metric_files(self) -> list[str]:
        """Every metric JSON some table needs that the suite can compute, plus `regression_extras` (task groups
        no table needs, evaluated on a few models so that every group is pinned): what the regression checks."""
        needs = {path for paper, table in self.tables() for path in self.table_inputs(paper, table)}
        extras = {(experiment, task) for experiment, groups in self.config.get("regression_extras", {}).items()
                  for group in groups for task in self.groups[group]}
        return sorted(needs | set(self._metric_files(extras)))

    def report_targets(self) -> list[str]:
        """Every table report: reports/<paper>/<table>.md."""
        return [str(self.reports / paper / f"{table}.md") for paper, table in self.tables()]
