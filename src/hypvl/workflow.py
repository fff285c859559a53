"""What the Snakemake workflow plans: targets and inputs derived from the replication specs.

The Snakefile stays declarative; this module answers "which files does this report need?" from the
specs, the task registry and the config. Only jobs the suite can run are planned: an experiment it
trains with a method it implements, on a corpus the config provides, with overrides it honours, or
whose weights come from outside and can be obtained (fetched, held locally, or stood in for at smoke
scale); and a task some evaluation group computes at the scale. Every
other cell renders as missing with the plan's reason (`blockers`), so every report target works now and
fills in as the suite grows.
Planning imports no torch (every `snakemake` call pays for what this module imports).
"""

import dataclasses
import itertools
import json
import re
import shlex
from pathlib import Path

from hypvl.cost import Job, Run, model_towers, size_job
from hypvl.errors import InputError
from hypvl.models.methods import EVAL_OVERRIDES, METHOD_NAMES
from hypvl.models.sources import OutsideWeights, outside_weights
from hypvl.replication.coverage import NEEDS_DATA, NEEDS_WEIGHTS, NOT_BUILT, Blockers
from hypvl.spec import SEED_MARK, Experiment, load_all_specs, row_needs, seed_variant, table_needs
from hypvl.tasks import GROUP_DATA, group_tasks, linear_probe_datasets, task_group, zero_shot_datasets
from hypvl.train.recipe import (RADIAL_METHOD, resolve_schedule, steps_for, stream_mode, supported_overrides,
                                train_section_for)

PROBE_FOLDERS = ("classification_dir", "probe_source_dir", "linear_probe_dir")  # eval keys: apart from each other
# config sections each step reads (a rule passes only these, so unrelated edits do not rerun it)
STEP_SECTIONS = {
    "synthesize": ("smoke_world",),
    "ground": ("data_dir", "spacy_model", "corpora", "grounding"),
    "train": ("scale", "cpu_code_path", "data_dir", "corpora", "model", "train"),
    "finetune": ("scale", "cpu_code_path", "radial_ft"),
    "evaluate": ("scale", "cpu_code_path", "data_dir", "eval"),
    "import": ("scale", "cpu_code_path", "model", "weights"),
    "standin": ("scale", "cpu_code_path", "data_dir", "corpora", "model", "train", "weights"),
    "coverage": None,  # the whole config: `hypvl coverage` plans as the workflow does
}
NO_WEIGHTS = {"local": {}, "library": {}, "standins": None}  # a config without a `weights` section (schema-checked
# configs always have one): weights from outside are fetched as the manifest says
SCHEDULE_OVERRIDES = ("steps", "batch_size")  # a trained model standing in for weights from outside has only these


def _trie_regex(node: dict) -> str:
    """The regex of a character trie (`""` marks the end of a name): shared prefixes written once."""
    branches = []
    for char in sorted(node):
        branches.append(re.escape(char) + _trie_regex(node[char]) if char else "")
    ends = "" in branches
    branches = [branch for branch in branches if branch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 and not ends else f"(?:{'|'.join(branches)})"
    return body + ("?" if ends else "")


class Plan:
    """Targets of the workflow for one config."""

    # the resources a training job may set (`train_resources`)
    TRAIN_RESOURCES = ("gpu", "gres", "nodes", "mem_mb", "runtime", "cpus_per_task", "mpi", "tasks", "tasks_per_gpu")

    def __init__(self, config: dict):
        self.config = config
        self.scale = config["scale"]
        self.results = Path(config["results_dir"])
        self.reports = Path(config["reports_dir"])
        self.specs = load_all_specs(config["replication_dir"], config["expected_dir"])
        self.groups = group_tasks(self.scale)
        self._spec_of = {exp: spec for spec in self.specs.values() for exp in spec.experiments}
        self._variants: dict[str, Experiment] = {}  # seed variant id -> the experiment trained with that seed
        self.weights = config.get("weights", NO_WEIGHTS)
        self.standins = self.weights["standins"]  # None where the real weights are fetched
        self._outside = {exp: outside_weights(self.experiment(exp).source, self.weights["library"])
                         for exp in self.experiments() if self.experiment(exp).source != "train"}
        self._counterpart = self._released_counterparts()
        self._weights_folders: dict[str, str] | None = None
        for source, path in self.weights["local"].items():
            if not Path(path).exists():
                raise InputError(f"config: weights.local.{source} is {path}, which does not exist")
        self.seeds = self._resolve_seeds(config.get("seeds"))
        for exp, seeds in self.seeds.items():
            declared = self.experiment(exp)
            for seed in seeds:
                if seed != declared.seed:
                    variant = seed_variant(declared, seed)
                    self._variants[variant] = dataclasses.replace(declared, id=variant, seed=seed)
                    self._spec_of[variant] = self._spec_of[exp]
        self._model_of: dict[str, str] = {}
        self._first_with_recipe: dict[str, str] = {}
        self._train_jobs: dict[str, Job] = {}
        self._group_acquisitions: dict[str, list[str]] = {}
        for experiment in self.experiments():  # by id, so the first of a recipe serves the others
            self.model_of(experiment)
        self.with_training = tuple(config.get("evaluate_with_training", ()))
        named = {"evaluate_with_training": self.with_training,
                 **{f"regression_extras.{exp}": groups for exp, groups in config.get("regression_extras", {}).items()}}
        for key, groups in named.items():
            unknown = sorted(set(groups) - set(self.groups))
            if unknown:
                raise InputError(f"config: {key} names unknown task groups {unknown} (groups: {sorted(self.groups)})")
        if self.with_training and config["resources"]["gpu"] is not None:
            raise InputError("config: evaluate_with_training must be empty where training runs on GPUs (resources.gpu):"
                             " a data-parallel training job would evaluate once per rank")
        folders = [(key, Path(config["eval"][key])) for key in PROBE_FOLDERS]
        for (key, folder), (other_key, other) in itertools.combinations(folders, 2):
            if folder == other or folder in other.parents or other in folder.parents:
                raise InputError(f"config: eval.{key} ({folder}) and eval.{other_key} ({other}) overlap; the "
                                 "linear-probe step replaces its folders, so each needs its own")

    def _resolve_seeds(self, value) -> dict[str, tuple[int, ...]]:
        """Config `seeds` as {experiment: the seeds its rows average over}, for the trained experiments it gives more
        (or other) seeds than their declared one. A value is a count n (the declared seed s and s+1 .. s+n-1) or a
        list of seeds; `seeds: n` applies to every trained table row, a mapping to the experiment ids and
        `<paper>/<table>` (that table's trained rows) it names."""
        if value is None:
            return {}
        if isinstance(value, int):
            targets = {exp: value for paper, table in self.tables() for exp in self._trained_rows(paper, table)}
        else:
            targets = {}
            for key, seeds in value.items():
                paper, _, table = key.partition("/")
                if table and paper in self.specs and table in self.specs[paper].tables:
                    targets.update(dict.fromkeys(self._trained_rows(paper, table), seeds))
                elif key in self._spec_of and self.runnable(key):
                    targets[key] = seeds
                else:
                    raise InputError(f"config: seeds.{key}: neither an experiment the suite trains nor a "
                                     f"<paper>/<table> of the replication specs")
        resolved = {}
        for exp, seeds in targets.items():
            declared = self.experiment(exp).seed
            chosen = tuple(range(declared, declared + seeds)) if isinstance(seeds, int) else tuple(seeds)
            if chosen != (declared,):
                resolved[exp] = chosen
        return resolved

    def _trained_rows(self, paper: str, table: str) -> list[str]:
        """The experiments of a table's rows that the suite trains."""
        return [exp for exp in self.specs[paper].table(table).experiments() if self.runnable(exp)]

    def declared_id(self, experiment: str) -> str:
        """The declared experiment a seed variant (`<id>__seed<N>`) trains with another seed; itself otherwise."""
        return experiment.partition(SEED_MARK)[0]

    def seeds_arg(self, paper: str, table: str) -> str:
        """JSON {experiment: seeds} of the table's rows that average several seeds (`hypvl compare --seeds`)."""
        rows = self.specs[paper].table(table).experiments()
        return json.dumps({exp: list(self.seeds[exp]) for exp in rows if exp in self.seeds}, sort_keys=True)

    def _with_variants(self, needs) -> set[tuple[str, str]]:
        """(experiment, task) pairs plus the same tasks on the experiments' seed variants."""
        return {(seed_variant(self.experiment(exp), seed), task) for exp, task in needs
                for seed in self.seeds.get(exp, (self.experiment(exp).seed,))} | set(needs)

    def step_config(self, step: str) -> str:
        """The shell-quoted JSON of the config sections `step` reads."""
        sections = STEP_SECTIONS[step] or self.config
        return shlex.quote(json.dumps({k: self.config[k] for k in sections}, sort_keys=True))

    def train_step_config(self, experiment: str, step: str = "train") -> str:
        """The shell-quoted JSON of the config sections training `experiment` reads (`step`: train, or standin): of
        `train.steps_for`, only the entries matching it (so editing another experiment's entry does not retrain it)."""
        sections = {k: self.config[k] for k in STEP_SECTIONS[step]}
        own = steps_for(experiment, self.config["train"])
        sections["train"] = {k: v for k, v in self.config["train"].items() if k != "steps_for"}
        sections["train"].update({"steps_for": own} if own else {})
        return shlex.quote(json.dumps(sections, sort_keys=True))

    def spec_path(self, experiment: str) -> str:
        """The replication spec declaring `experiment`."""
        return str(self._spec(experiment).path)

    def experiment(self, experiment: str) -> Experiment:
        """The declared Experiment called `experiment` (or the seed variant of one)."""
        if experiment in self._variants:
            return self._variants[experiment]
        return self._spec(experiment).experiments[experiment]

    def _spec(self, experiment: str):
        if experiment not in self._spec_of:
            raise ValueError(f"no replication spec declares experiment {experiment!r}")
        return self._spec_of[experiment]

    def experiments(self) -> list[str]:
        """Every declared experiment id and seed variant, sorted."""
        return sorted(self._spec_of)

    def runnable(self, experiment: str) -> bool:
        """True when the suite trains `experiment` itself (source `train`), with a method it implements,
        on a training corpus the config provides (`corpora`), honouring every override it declares
        (an override nothing reads, e.g. an embedding width, would train some other model); or when its
        weights come from outside and can be obtained (`obtainable`). A radial_ft experiment is runnable when its
        training set is configured (`eval.datasets`) and its base is."""
        declared = self.experiment(experiment)
        if declared.source != "train":
            return self.obtainable(experiment)
        if declared.method not in (*METHOD_NAMES, RADIAL_METHOD):
            return False
        supported = set(declared.overrides) <= supported_overrides(declared.method)
        if declared.method == RADIAL_METHOD:
            return (supported and declared.data in self.config["eval"]["datasets"]
                    and self.runnable(self.base_of(experiment)))
        start = declared.overrides.get("init_from")
        return supported and declared.data in self.config["corpora"] and (start is None or self.runnable(start))

    def fine_tuned(self, experiment: str) -> bool:
        """True for an experiment that aligns another experiment's model (method radial_ft, `hypvl finetune`)."""
        return self.experiment(experiment).method == RADIAL_METHOD

    def base_of(self, experiment: str) -> str:
        """The experiment whose model radial_ft experiment `experiment` aligns: its `base` override names it, or
        names its source (e.g. `pretrained:openai/clip-vit-base-patch32`; the first such experiment by id)."""
        base = self.experiment(experiment).overrides.get("base")
        named = [exp for exp in self.experiments() if base in (exp, self.experiment(exp).source)]
        if not named:
            raise InputError(f"{self.spec_path(experiment)}: experiments.{experiment}.overrides.base: {base!r} is "
                             "neither a declared experiment nor the source of one")
        return named[0]

    def base_checkpoint(self, experiment: str) -> str:
        """The checkpoint radial_ft experiment `experiment` starts from."""
        return self.checkpoint(self.model_of(self.base_of(experiment)))

    def finetune_data(self, experiment: str) -> dict[str, str]:
        """What radial_ft experiment `experiment` aligns on, as `hypvl finetune` options: `--train-csv`, the HierarCaps
        train CSV (its `data` in `eval.datasets`), and for the CLIP objective `--train-images`, the CC3M shards
        holding the rows' images."""
        declared, data = self.experiment(experiment), Path(self.config["data_dir"])
        datasets = self.config["eval"]["datasets"]
        options = {"--train-csv": str(data / datasets[declared.data])}
        if declared.overrides.get("objective") == "clip":
            options["--train-images"] = str(data / datasets["hierarcaps_train_images"])
        return options

    def finetune_inputs(self, experiment: str) -> list[str]:
        """What aligning `experiment` needs from the data stage: `data_inputs` and its `finetune_data`, which the smoke
        world writes; at paper scale, the acquisitions holding them."""
        data = list(self.finetune_data(experiment).values())
        return [*self.data_inputs(experiment), *(data if self.scale == "smoke" else self.acquisitions(data))]

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

    def blocker(self, experiment: str) -> str | None:
        """Why the plan makes no model for `experiment` (a reason of hypvl.replication.coverage), None where it does:
        weights from outside; a method or override not built; a training corpus the config lacks; a start
        (`init_from`) or an aligned base (radial_ft) with one of these."""
        if self.runnable(experiment):
            return None
        declared = self.experiment(experiment)
        if declared.source != "train":
            return NEEDS_WEIGHTS
        if (declared.method not in (*METHOD_NAMES, RADIAL_METHOD)
                or not set(declared.overrides) <= supported_overrides(declared.method)):
            return NOT_BUILT
        if declared.method == RADIAL_METHOD:  # an alignment: its training set, then the model it aligns
            if declared.data not in self.config["eval"]["datasets"]:
                return NEEDS_DATA
            return self.blocker(self.base_of(experiment)) or NOT_BUILT
        if declared.data not in self.config["corpora"]:
            return NEEDS_DATA
        start = declared.overrides.get("init_from")
        return NOT_BUILT if start is None else self.blocker(start) or NOT_BUILT

    def blockers(self, paper: str, table: str) -> Blockers:
        """The experiments and tasks of a table the plan produces no metric for, with the reason."""
        needs = table_needs(self.specs[paper], table)
        experiments, tasks = {exp for exp, _ in needs}, {task for _, task in needs}
        blocked = {exp: self.blocker(exp) for exp in sorted(experiments)}
        return Blockers({exp: reason for exp, reason in blocked.items() if reason},
                        {task: NEEDS_DATA for task in sorted(tasks) if not self.computable(task)})

    def blockers_arg(self, paper: str, table: str) -> str:
        """`hypvl compare`'s shell-quoted `--blockers` JSON for a table."""
        return shlex.quote(self.blockers(paper, table).to_json())

    def model_of(self, experiment: str) -> str:
        """The experiment whose model serves `experiment`: of the trained experiments with the same recipe
        (method, backbone, data, boxes, seed, overrides and `train.steps_for`'s step count, `init_from` by the model it
        names; evaluation-only overrides such as `eval_prompts` are not part of a recipe), the first by id.
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
                if declared.method == RADIAL_METHOD:
                    overrides["base"] = self.model_of(self.base_of(experiment))
                steps = train_section_for(experiment, self.config["train"]).get("steps")  # steps_for: per id
                recipe = json.dumps([declared.method, declared.backbone, declared.data, declared.boxes,
                                     declared.seed, overrides, steps], sort_keys=True)
                self._model_of[experiment] = self._first_with_recipe.setdefault(recipe, experiment)
        return self._model_of[experiment]

    def trains(self, experiment: str) -> bool:
        """True when the train rule makes the model of `experiment` (a trained experiment serving itself)."""
        return (self.experiment(experiment).source == "train" and not self.fine_tuned(experiment)
                and self.model_of(experiment) == experiment)

    def fine_tunes(self, experiment: str) -> bool:
        """True when the finetune rule makes the model of `experiment` (a radial_ft experiment serving itself)."""
        return (self.experiment(experiment).source == "train" and self.fine_tuned(experiment)
                and self.model_of(experiment) == experiment)

    @staticmethod
    def pattern(ids) -> str:
        """A regex matching exactly `ids` (a wildcard constraint), as a trie of their common prefixes (Snakemake
        compiles it into every output pattern of its rule: the train rule's 93 ids in 23 outputs took a quarter of
        planning); nothing when there are none."""
        trie: dict = {}
        for name in ids:
            node = trie
            for char in name:
                node = node.setdefault(char, {})
            node[""] = {}
        return _trie_regex(trie) if trie else "(?!)"

    def trained_pattern(self, trained: bool = True) -> str:
        """The experiment ids whose model a job that also evaluates it on `evaluate_with_training` makes (the train,
        finetune and import rules: `trained`), or all the others."""
        return self.pattern(exp for exp in self.experiments()
                            if (self.trains(exp) or self.fine_tunes(exp) or self.imports(exp)) == trained)

    def imports(self, experiment: str) -> bool:
        """True when the import rule makes the model of `experiment` (weights from outside that can be obtained)."""
        return experiment in self._outside and self.runnable(experiment)

    def trained_by(self, rule: str) -> str:
        """The experiment ids whose model rule `rule` makes: `train` (hypvl train) or `finetune` (hypvl finetune)."""
        makes = self.fine_tunes if rule == "finetune" else self.trains
        return self.pattern(exp for exp in self.experiments() if makes(exp))

    def imported_pattern(self, stood_in: bool = False) -> str:
        """The experiment ids whose weights from outside the import rule brings in (`stood_in`: the import_standin
        rule, writing a stand-in first)."""
        return self.pattern(exp for exp in self._outside if self.imports(exp) and self.stood_in(exp) == stood_in)

    def source_checkpoint(self, source: str) -> str:
        """The checkpoint holding the weights of outside `source` (e.g. a fine-tuning's base): that of the first
        experiment, by id, declaring it. ValueError when none does."""
        declaring = [exp for exp in self._outside if self.experiment(exp).source == source]
        if not declaring:
            raise ValueError(f"no experiment declares source {source!r}")
        return self.checkpoint(declaring[0])

    def stood_in(self, experiment: str) -> bool:
        """True when the import of outside `experiment` reads a stand-in (smoke scale, its source not held locally),
        which the same job writes first (rule import_standin)."""
        return (self.standins is not None and self.imports(experiment)
                and self.experiment(experiment).source not in self.weights["local"])

    def weights_input(self, experiment: str) -> str:
        """What the import reads for `experiment`: the path config `weights.local` gives for its source, its folder
        under data_dir/weights (fetched there), or, stood in, the folder its stand-in is written to
        (results/<scale>/standins/<experiment>/weights, one per experiment, so the job writing it imports it)."""
        source = self.experiment(experiment).source
        if source in self.weights["local"]:
            return self.weights["local"][source]
        if self.standins is not None:
            return str(self.results / "standins" / experiment / "weights")
        return str(Path(self.config["data_dir"]) / "weights" / self.outside(experiment).folder)

    def weights_folders(self) -> dict[str, str]:
        """Weights folder -> the first (by id) runnable outside experiment reading it, for the folders the fetch
        rule makes (none at a scale with stand-ins)."""
        if self._weights_folders is None:
            self._weights_folders = {}
            for exp in self._outside:
                if (self.standins is None and self.experiment(exp).source not in self.weights["local"]
                        and self.runnable(exp)):
                    self._weights_folders.setdefault(self.weights_input(exp), exp)
        return self._weights_folders

    def standin_args(self, experiment: str) -> list[str]:
        """The `hypvl write-standin` arguments giving the layout of the weights of outside `experiment` (the
        checkpoint's file name, for a released one)."""
        outside = self.outside(experiment)
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

    def raw_corpus_path(self, corpus: str) -> str:
        """The folder of training corpus `corpus`'s raw shards (config `grounding.raw.<corpus>.path`)."""
        return str(Path(self.config["data_dir"]) / self.config["grounding"]["raw"][corpus]["path"])

    def raw_corpus_inputs(self, corpus: str) -> list[str]:
        """What grounding `corpus` needs from the data stage: at smoke scale, its synthesised raw corpus; at paper
        scale, the acquisition of the dataset whose folder holds it (config `acquire`)."""
        if self.scale != "smoke":
            return self.acquisitions([self.raw_corpus_path(corpus)])
        return [str(Path(self.raw_corpus_path(corpus)) / "corpus.json")]

    def group_data(self, group: str) -> list[str]:
        """The paper-scale data evaluation group `group` reads (hypvl.tasks.GROUP_DATA), as paths in this config:
        classification splits as `<classification_dir>/<set>/<split>` folders."""
        evaluation, root = self.config["eval"], Path(self.config["data_dir"])
        sets, split = root / evaluation["classification_dir"], evaluation["classification_split"]
        paths = []
        for item in GROUP_DATA.get(group, ()):
            if item == "classification":
                paths += [sets / name / split for name in zero_shot_datasets(self.scale)]
            elif item == "probe":
                paths += [sets / name / split for name in linear_probe_datasets(self.scale)]
            elif item.startswith("classification/"):
                paths.append(sets / item.removeprefix("classification/") / split)
            elif item in evaluation["datasets"]:
                paths.append(root / evaluation["datasets"][item])
        return [str(path) for path in paths]

    def evaluation_inputs(self, group: str, experiment: str) -> list[str]:
        """What evaluating `group` on `experiment` needs from the data stage: `data_inputs`, the linear-probe splits
        the group reads (`probe_inputs`), and at paper scale the acquisitions of the data the group reads."""
        if group not in self._group_acquisitions:
            self._group_acquisitions[group] = self.acquisitions(self.group_data(group))
        return [*self.data_inputs(experiment), *self.probe_inputs([group]), *self._group_acquisitions[group]]

    def acquisition_folder(self, dataset: str) -> str:
        """The folder dataset `dataset` of the acquisition manifest is fetched into (config `acquire`)."""
        return str(Path(self.config["data_dir"]) / self.config["acquire"][dataset])

    def acquisition_marker(self, dataset: str) -> str:
        """The file `hypvl acquire` writes once `dataset` is fetched and every path the readers need is there."""
        return str(Path(self.config["data_dir"]) / "acquired" / f"{dataset}.json")

    def _acquired(self, dataset: str, paths) -> list[str]:
        """The paths of `paths` inside the folder of acquisition `dataset`."""
        folder = Path(self.acquisition_folder(dataset))
        return [path for path in paths if Path(path) == folder or folder in Path(path).parents]

    def acquisitions(self, paths) -> list[str]:
        """Markers of the acquisitions (config `acquire`) whose folders hold any of `paths`."""
        return sorted(self.acquisition_marker(dataset) for dataset in self.config["acquire"]
                      if self._acquired(dataset, paths))

    def acquisition_ready(self, dataset: str) -> list[str]:
        """What the readers need of acquisition `dataset`: the paths of every evaluation group and raw training corpus
        that lie in its folder (checked once the fetch is done; a missing one is a manual `prepare` step)."""
        needed = {path for group in self.groups for path in self.group_data(group)}
        needed |= {self.raw_corpus_path(corpus) for corpus in self.config["grounding"]["raw"]}
        return sorted(self._acquired(dataset, needed))

    def data_inputs(self, experiment: str | None = None) -> list[str]:
        """What a step needs from the data stage: the smoke world's manifest (paper-scale data is checked by each
        step) and, for an experiment the suite trains on a grounded corpus, that corpus's grounding summary."""
        needs = [str(Path(self.config["data_dir"]) / "manifest.json")] if self.scale == "smoke" else []
        corpus = None if experiment is None else self.trained_corpus(experiment)
        return needs if corpus is None else [*needs, self.grounded_summary(corpus)]

    def probe_datasets(self) -> list[str]:
        """The linear-probe sets (MERU Table 7) of this scale."""
        return linear_probe_datasets(self.scale)

    def probe_source(self, name: str) -> str:
        """The folder of linear-probe set `name`'s source splits (the smoke world writes it; at paper scale the user
        puts CLIP_benchmark's webdataset or an image folder there)."""
        return str(Path(self.config["data_dir"]) / self.config["eval"]["probe_source_dir"] / name)

    def probe_source_inputs(self, name: str) -> list[str]:
        """What cutting set `name`'s probe splits needs: at smoke scale its sources (the smoke world's); at paper scale
        the acquisitions whose folders hold them (config `acquire`), if any: sources the user placed by hand are
        checked by the job, which names a missing split, so that a run without them still plans."""
        source = self.probe_source(name)
        return [source] if self.scale == "smoke" else self.acquisitions([source])

    def probe_folder(self, name: str) -> str:
        """The folder of linear-probe set `name`'s train and val splits (`hypvl probe-splits`)."""
        return str(Path(self.config["data_dir"]) / self.config["eval"]["linear_probe_dir"] / name)

    def probe_splits_options(self) -> list[str]:
        """`hypvl probe-splits` options beyond name, source and dest: at smoke scale the sources are the smoke world's
        scaled-down stand-ins."""
        return ["--scaled-source"] if self.scale == "smoke" else []

    def probe_inputs(self, groups) -> list[str]:
        """The linear-probe splits (rule probe_splits) the `linprobe_<set>` tasks of the task `groups` read."""
        tasks = {task for group in groups for task in self.groups[group]}
        return [self.probe_folder(name) for name in self.probe_datasets() if f"linprobe_{name}" in tasks]

    def training_run(self, experiment: str) -> Run:
        """The training run of `experiment` at this scale: its towers, global batch, steps, encodings per sample
        (2 for a method that also encodes a box image and text per sample) and whether its encoders are frozen."""
        declared = self.experiment(experiment)
        schedule = resolve_schedule(declared.overrides, train_section_for(experiment, self.config["train"]))
        encodings = 2 if stream_mode(declared.method, declared.boxes) == "compositional" else 1
        return Run(model_towers(self.config["model"], declared.backbone), schedule.batch_size, schedule.steps,
                   encodings, bool(declared.overrides.get("freeze_encoders")))

    def train_cost(self, experiment: str) -> float:
        """Training TFLOPs of `experiment`: the train rule's priority, so that the longest runs start first and the
        last minutes do not leave a core idle."""
        return self.training_run(experiment).flops / 1e12

    def first_priority(self) -> float:
        """A job priority above every training job's (`train_cost`): what the data acquisition and probe_splits jobs
        take."""
        return 1 + max((self.train_cost(exp) for exp in self.experiments() if self.trains(exp) and self.runnable(exp)),
                       default=0)

    def train_job(self, experiment: str) -> Job | None:
        """The GPU job that trains `experiment` (hypvl.cost), or None where training is one CPU process."""
        resources = self.config["resources"]
        if resources["gpu"] is None:
            return None
        if experiment not in self._train_jobs:  # asked for once per resource of every job: size each run once
            self._train_jobs[experiment] = size_job(self.training_run(experiment), resources["gpu"],
                                                    resources["max_runtime"], resources["runtime_margin"])
        return self._train_jobs[experiment]

    def train_resources(self, experiment: str) -> dict:
        """Snakemake resources of the job training `experiment` (None: not set), named as the SLURM executor plugin
        reads them: one node asks for `gpu` GPUs; several nodes ask for `gres` GPUs on each, one task per node,
        and `mpi` marks the job as launching its own `srun` (the train rule's launcher)."""
        job = self.train_job(experiment)
        if job is None:
            fixed = self.config["resources"]["jobs"]["train"]
            return {"gpu": fixed["gpu"] or None, "mem_mb": fixed["mem_mb"], "runtime": fixed["runtime"]}
        several = job.nodes > 1
        return {"gpu": None if several else job.gpus, "gres": f"gpu:{job.gpus_per_node}" if several else None,
                "nodes": job.nodes, "mem_mb": job.mem_mb, "runtime": job.runtime, "cpus_per_task": job.threads,
                "mpi": "srun" if several else None, "tasks": job.nodes if several else None,
                "tasks_per_gpu": 0 if several else None}

    def train_threads(self, experiment: str) -> int:
        """CPU cores of the job training `experiment` (on each node)."""
        job = self.train_job(experiment)
        return self.config["threads_per_job"] if job is None else job.threads

    def train_launcher(self, experiment: str, threads: int) -> str:
        """The command that starts `hypvl train` for `experiment`, with its `--threads` (per process): `hypvl` itself
        for a CPU run (on the job's `threads`); torchrun with a process per GPU on one node; on several nodes, `srun`
        starting one torchrun per node that meet at the first node (torchrun's c10d rendezvous, the SLURM job id
        naming the run). A GPU run's processes share the node's cores."""
        job = self.train_job(experiment)
        if job is None:
            return f"hypvl train --threads {threads}"
        per_rank = f"-m hypvl.cli train --threads {job.threads // job.gpus_per_node}"
        if job.nodes == 1:
            return f"torchrun --standalone --nproc-per-node {job.gpus} {per_rank}"
        head = '"$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"'
        return (f"srun --nodes {job.nodes} --ntasks-per-node 1 --kill-on-bad-exit=1 torchrun --nnodes {job.nodes}"
                f" --nproc-per-node {job.gpus_per_node} --rdzv-backend c10d --rdzv-id \"$SLURM_JOB_ID\""
                f" --rdzv-endpoint {head}:29500 {per_rank}")

    def train_retries(self) -> int:
        """Further attempts the longest training run needs beyond its first job (each resuming from the last
        one's checkpoint): the train rule's `retries`."""
        jobs = [self.train_job(exp) for exp in self.experiments() if self.trains(exp) and self.runnable(exp)]
        return max((job.attempts - 1 for job in jobs if job is not None), default=0)

    def step_resources(self, step: str) -> dict:
        """Snakemake resources of the `finetune`, `ground`, `evaluate`, `acquire` or `import` jobs (config
        `resources.jobs`)."""
        fixed = self.config["resources"]["jobs"][step]
        return {"gpu": fixed["gpu"] or None, "mem_mb": fixed["mem_mb"], "runtime": fixed["runtime"]}

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

    def evaluations_after(self, experiment: str, threads: int) -> str:
        """The `:: evaluate ...` commands a job making the model of `experiment` runs after it, in its process:
        one per `evaluate_with_training` group (empty where the list is)."""
        return "".join(f" :: {self.evaluate_args(group, experiment, threads)}" for group in self.with_training)

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
        return self._metric_files(self._with_variants(table_needs(self.specs[paper], table)))

    def row_inputs(self, paper: str, table: str, row: str) -> list[str]:
        """Metric JSONs one printed row (or a printed row's released checkpoint, `<row>__released`) needs that
        the suite can compute (empty for an external row).

        ValueError names the table's rows when `row` is not one of them.
        """
        table_spec = self.specs[paper].table(table)
        rows = table_spec.compared_rows()
        if row not in rows:
            raise ValueError(f"{paper} {table} has no row {row!r} (rows: {', '.join(rows)})")
        return self._metric_files(self._with_variants(row_needs(table_spec, row)))

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
        needs = {path for paper, table in self.tables()  # seed variants are not pinned
                 for path in self._metric_files(table_needs(self.specs[paper], table))}
        extras = {(experiment, task) for experiment, groups in self.config.get("regression_extras", {}).items()
                  for group in groups for task in self.groups[group]}
        return sorted(needs | set(self._metric_files(extras)))

    def report_targets(self) -> list[str]:
        """Every table report: reports/<paper>/<table>.md."""
        return [str(self.reports / paper / f"{table}.md") for paper, table in self.tables()]
