"""The plan's core: which models the workflow makes, from the replication specs and the config.

Every stage reads it: the experiments the specs declare and their seed variants (config `seeds`); which of them the
suite can make a model for (`runnable`: trained with a method it implements, on a corpus the config provides, with
overrides it honours, or with weights from outside that can be obtained) and why not (`blocker`); which experiments
share one model (`model_of`, the recipe); the wildcard patterns of the rules making models; and what a step's job
reads of the config and asks of the machine (`step_config`, `step_resources`).
"""

import dataclasses
import json
import shlex
from pathlib import Path

from hypvl.errors import InputError
from hypvl.outside.extras import ExtraModel, extra_models
from hypvl.methods import EVAL_OVERRIDES, METHODS, import_plugins, names
from hypvl.outside.sources import OutsideWeights, outside_weights
from hypvl.replication.coverage import NEEDS_DATA, NEEDS_WEIGHTS, NOT_BUILT
from hypvl.spec.load import load_all_specs
from hypvl.spec.paper import SEED_MARK, Experiment, seed_variant
from hypvl.tasks import group_tasks
from hypvl.train.recipe import supported_overrides, train_section_for
from hypvl.workflow import patterns
from hypvl.workflow.steps import step_resources, step_sections

NO_WEIGHTS = {"local": {}, "library": {}, "standins": None}  # a config without a `weights` section (schema-checked
# configs always have one): weights from outside are fetched as the manifest says
SCHEDULE_OVERRIDES = ("steps", "batch_size")  # a trained model standing in for weights from outside has only these


class Core:
    """The experiments of one config and the models the workflow makes for them."""

    pattern = staticmethod(patterns.pattern)  # the wildcard constraint matching exactly some ids

    def __init__(self, config: dict):
        self.config = config
        self.scale = config["scale"]
        self.results = Path(config["results_dir"])
        import_plugins(config.get("plugins", ()))  # their methods, before a spec names one
        self.specs = load_all_specs(config["replication_dir"], config["expected_dir"])
        self.groups = group_tasks(self.scale)
        self._spec_of = {exp: spec for spec in self.specs.values() for exp in spec.experiments}
        self._variants: dict[str, Experiment] = {}  # seed variant id -> the experiment trained with that seed
        self.weights = config.get("weights", NO_WEIGHTS)
        self.standins = self.weights["standins"]  # None where the real weights are fetched
        self.extras: dict[str, ExtraModel] = {extra.experiment: extra for extra in extra_models(config).values()}
        for exp, extra in self.extras.items():
            if exp in self._spec_of:
                raise InputError(f"config: extra_models.{extra.name}: its id {exp!r} is an experiment of "
                                 f"{self._spec_of[exp].path}; rename it")
        self._outside = {exp: outside_weights(self.experiment(exp).source, self.weights["library"])
                         for exp in sorted(self._spec_of) if self.experiment(exp).source != "train"}
        self._counterpart = self._released_counterparts()
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
        for experiment in self.experiments():  # by id, so the first of a recipe serves the others
            self.model_of(experiment)
        self.with_training = tuple(config.get("evaluate_with_training", ()))  # what a job making a model evaluates
        named = {"evaluate_with_training": self.with_training,
                 **{f"regression_extras.{exp}": groups for exp, groups in config.get("regression_extras", {}).items()}}
        for key, groups in named.items():
            unknown = sorted(set(groups) - set(self.groups))
            if unknown:
                raise InputError(f"config: {key} names unknown task groups {unknown} (groups: {sorted(self.groups)})")
        if self.with_training and config["resources"]["gpu"] is not None:
            raise InputError("config: evaluate_with_training must be empty where training runs on GPUs (resources.gpu):"
                             " a data-parallel training job would evaluate once per rank")

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

    def tables(self) -> list[tuple[str, str]]:
        """(paper, table) for every table of every spec."""
        return [(paper, table) for paper, spec in sorted(self.specs.items()) for table in spec.tables]

    def declared_id(self, experiment: str) -> str:
        """The declared experiment a seed variant (`<id>__seed<N>`) trains with another seed; itself otherwise."""
        return experiment.partition(SEED_MARK)[0]

    def step_config(self, step: str) -> str:
        """The shell-quoted JSON of the config sections `step` reads (`steps.step_sections`)."""
        return shlex.quote(json.dumps(step_sections(self.config, step), sort_keys=True))

    def step_resources(self, step: str) -> dict:
        """Snakemake resources of the jobs of `step` (`steps.step_resources`)."""
        return step_resources(self.config, step)

    def spec_path(self, experiment: str) -> str:
        """The replication spec declaring `experiment`."""
        return str(self._spec(experiment).path)

    def experiment(self, experiment: str) -> Experiment:
        """The declared Experiment called `experiment` (or the seed variant of one)."""
        if experiment in self._variants:
            return self._variants[experiment]
        if experiment in self.extras:
            return self.extras[experiment].declared()
        return self._spec(experiment).experiments[experiment]

    def _spec(self, experiment: str):
        if experiment not in self._spec_of:
            raise ValueError(f"no replication spec declares experiment {experiment!r}")
        return self._spec_of[experiment]

    def experiments(self) -> list[str]:
        """Every declared experiment id, seed variant and extra model, sorted."""
        return sorted([*self._spec_of, *self.extras])

    def runnable(self, experiment: str) -> bool:
        """True when the suite trains `experiment` itself (source `train`), with a method it implements,
        on a training corpus the config provides (`corpora`), honouring every override it declares
        (an override nothing reads, e.g. an embedding width, would train some other model); or when its
        weights come from outside and can be obtained (`obtainable`). A radial_ft experiment is runnable when its
        training set is configured (`eval.datasets`) and its base is."""
        if experiment in self.extras:  # a file or folder here, or fetched where nothing is stood in
            return self.extras[experiment].local or self.standins is None
        declared = self.experiment(experiment)
        if declared.source != "train":
            return self.obtainable(experiment)
        if declared.method not in METHODS:
            return False
        supported = set(declared.overrides) <= supported_overrides(declared.method)
        if declared.method in names(aligns=True):
            return (supported and declared.data in self.config["eval"]["datasets"]
                    and self.runnable(self.base_of(experiment)))
        start = declared.overrides.get("init_from")
        return supported and declared.data in self.config["corpora"] and (start is None or self.runnable(start))

    def fine_tuned(self, experiment: str) -> bool:
        """True for an experiment that aligns another experiment's model (method radial_ft, `hypvl finetune`)."""
        return self.experiment(experiment).method in names(aligns=True)

    def base_of(self, experiment: str) -> str:
        """The experiment whose model radial_ft experiment `experiment` aligns: its `base` override names it, or
        names its source (e.g. `pretrained:openai/clip-vit-base-patch32`; the first such experiment by id)."""
        base = self.experiment(experiment).overrides.get("base")
        named = [exp for exp in self.experiments() if base in (exp, self.experiment(exp).source)]
        if not named:
            raise InputError(f"{self.spec_path(experiment)}: experiments.{experiment}.overrides.base: {base!r} is "
                             "neither a declared experiment nor the source of one")
        return named[0]

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

    def outside_weights(self, experiment: str) -> OutsideWeights | None:
        """Where the weights of `experiment` come from (None for a trained one)."""
        return self._outside.get(experiment)

    def outside_experiments(self) -> list[str]:
        """The experiments whose weights come from outside, by id."""
        return list(self._outside)

    def obtainable(self, experiment: str) -> bool:
        """True when the weights of outside experiment `experiment` can be had: held locally (config
        `weights.local`) or fetched at a scale without stand-ins; at smoke scale, when a stand-in can be made:
        for a released checkpoint, its table row's model is trained here (`released_counterpart`); for an open_clip
        CLIP, a CLIP of the mapped backbone is; a transformers model trains its own stand-in on
        `weights.standins.data`."""
        declared, outside = self.experiment(experiment), self.outside_weights(experiment)
        if declared.source in self.weights["local"] or self.standins is None:
            return True
        if outside.library is None:
            counterpart = self.released_counterpart(experiment)
            return counterpart is not None and self.runnable(counterpart)
        if declared.backbone not in self.standins["backbones"]:
            return False
        if outside.library == "open_clip":
            return self.clip_counterpart(experiment) is not None
        return self.standins["data"] in self.config["corpora"]

    def released_counterpart(self, experiment: str) -> str | None:
        """The trained experiment of the table rows released checkpoint `experiment` is mapped beside, if any."""
        return self._counterpart.get(experiment)

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
        if (declared.method not in METHODS
                or not set(declared.overrides) <= supported_overrides(declared.method)):
            return NOT_BUILT
        if declared.method in names(aligns=True):  # an alignment: its training set, then the model it aligns
            if declared.data not in self.config["eval"]["datasets"]:
                return NEEDS_DATA
            return self.blocker(self.base_of(experiment)) or NOT_BUILT
        if declared.data not in self.config["corpora"]:
            return NEEDS_DATA
        start = declared.overrides.get("init_from")
        return NOT_BUILT if start is None else self.blocker(start) or NOT_BUILT

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
                if declared.method in names(aligns=True):
                    overrides["base"] = self.model_of(self.base_of(experiment))
                steps = train_section_for(experiment, self.config["train"]).get("steps")  # steps_for: per id
                recipe = json.dumps([declared.method, declared.backbone, declared.data, declared.boxes,
                                     declared.seed, overrides, steps], sort_keys=True)
                self._model_of[experiment] = self._first_with_recipe.setdefault(recipe, experiment)
        return self._model_of[experiment]

    def checkpoint(self, experiment: str) -> str:
        """Where the model of `experiment` is saved."""
        return str(self.results / "models" / experiment / "checkpoint.pt")

    def trains(self, experiment: str) -> bool:
        """True when the train rule makes the model of `experiment` (a trained experiment serving itself)."""
        return (self.experiment(experiment).source == "train" and not self.fine_tuned(experiment)
                and self.model_of(experiment) == experiment)

    def fine_tunes(self, experiment: str) -> bool:
        """True when the finetune rule makes the model of `experiment` (a radial_ft experiment serving itself)."""
        return (self.experiment(experiment).source == "train" and self.fine_tuned(experiment)
                and self.model_of(experiment) == experiment)

    def imports(self, experiment: str) -> bool:
        """True when the import rule makes the model of `experiment` (weights from outside that can be obtained)."""
        return (experiment in self._outside or experiment in self.extras) and self.runnable(experiment)

    def makes_model(self, experiment: str) -> bool:
        """True when a job making a model (the train, finetune and import rules) makes that of `experiment`: the
        job that also evaluates it on `evaluate_with_training`."""
        return self.trains(experiment) or self.fine_tunes(experiment) or self.imports(experiment)

    def trained_pattern(self, trained: bool = True) -> str:
        """The experiment ids whose model a job making a model makes (`makes_model`: `trained`), or all the others."""
        return self.pattern(exp for exp in self.experiments() if self.makes_model(exp) == trained)
