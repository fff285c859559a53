"""The plan of weights from outside (workflows/outside.smk): an experiment whose `source` is released:<name> or
pretrained:<hub id> gets its model by importing its weights folder.

The folder is fetched at paper scale (from the internet or config `fetch`'s mirror; at the pilot scale from the mirror,
where a full-size stand-in is written first), or read where config `weights.local` says the files are kept. At smoke
scale the import job first writes a stand-in in the same layout from a model trained here (`weights.standins`): a
released checkpoint's from its table row's model, an open_clip CLIP's from our CLIP, a transformers model's from a
stand-in trained under the name of the first outside experiment of its architecture. Whether an outside experiment's
weights can be had at all is the core's word (`Core.obtainable`).
"""

from pathlib import Path

from hypvl.workflow.core import Core
from hypvl.workflow.data import DataStage
from hypvl.workflow.training import TrainingStage


class OutsideStage:
    """The fetch, stand-in and import jobs of one plan."""

    def __init__(self, plan: Core, data: DataStage, training: TrainingStage):
        self.plan = plan
        self.data = data
        self.training = training
        self.weights = plan.weights
        self._folders: dict[str, str] | None = None

    def imported_pattern(self, stood_in: bool = False) -> str:
        """The experiment ids whose weights from outside the import rule brings in (`stood_in`: the import_standin
        rule, writing a stand-in first)."""
        return self.plan.pattern(exp for exp in self.plan.outside_experiments()
                                 if self.plan.imports(exp) and self.stood_in(exp) == stood_in)

    def source_checkpoint(self, source: str) -> str:
        """The checkpoint holding the weights of outside `source` (e.g. a fine-tuning's base): that of the first
        experiment, by id, declaring it. ValueError when none does."""
        declaring = [exp for exp in self.plan.outside_experiments() if self.plan.experiment(exp).source == source]
        if not declaring:
            raise ValueError(f"no experiment declares source {source!r}")
        return self.plan.checkpoint(declaring[0])

    def stood_in(self, experiment: str) -> bool:
        """True when the import of outside `experiment` reads a stand-in (smoke scale, its source not held locally),
        which the same job writes first (rule import_standin)."""
        return (self.plan.standins is not None and self.plan.imports(experiment)
                and self.plan.experiment(experiment).source not in self.weights["local"])

    def weights_input(self, experiment: str) -> str:
        """What the import reads for `experiment`: the path config `weights.local` gives for its source, its folder
        under data_dir/weights (fetched there), or, stood in, the folder its stand-in is written to
        (results/<scale>/standins/<experiment>/weights, one per experiment, so the job writing it imports it)."""
        source = self.plan.experiment(experiment).source
        if source in self.weights["local"]:
            return self.weights["local"][source]
        if self.plan.standins is not None:
            return str(self.plan.results / "standins" / experiment / "weights")
        return str(self.data.root / "weights" / self.plan.outside_weights(experiment).folder)

    def extra_pattern(self) -> str:
        """The experiment ids of the extra models the import_extra rule brings in (config `extra_models`)."""
        return self.plan.pattern(exp for exp in self.plan.extras if self.plan.imports(exp))

    def extra_input(self, experiment: str) -> list[str]:
        """What importing extra model `experiment` reads here: its file or folder (none for a hub id or an open_clip
        release, which the job fetches)."""
        extra = self.plan.extras[experiment]
        return [extra.location] if extra.local else []

    def extra_args(self, experiment: str) -> list[str]:
        """The `hypvl import-extra` arguments declaring extra model `experiment`."""
        extra = self.plan.extras[experiment]
        args = ["--name", extra.name, "--source", extra.source, "--geometry", extra.geometry]
        return args + (["--method", extra.method, "--backbone", extra.backbone] if extra.method else [])

    def weights_folders(self) -> dict[str, str]:
        """Weights folder -> the first (by id) runnable outside experiment reading it, for the folders the fetch
        rule makes (none at a scale with stand-ins)."""
        if self._folders is None:
            self._folders = {}
            for exp in self.plan.outside_experiments():
                if (self.plan.standins is None and self.plan.experiment(exp).source not in self.weights["local"]
                        and self.plan.runnable(exp)):
                    self._folders.setdefault(self.weights_input(exp), exp)
        return self._folders

    def manifest_options(self) -> list[str]:
        """`--sources` and the weights manifest config `fetch.weights` names; none for the package's (the commands'
        default: its path moves with the checkout, and a changed parameter would run a job again)."""
        manifest = self.plan.config["fetch"]["weights"]
        return ["--sources", manifest] if manifest else []

    def fetch_options(self) -> list[str]:
        """`hypvl fetch-weights` options: the mirror and the weights manifest, where configured (manifest_options)."""
        return self.data.fetch_options(self.plan.config["fetch"]["weights"])

    def pilot_weights(self, folder: str) -> list[str]:
        """What fetching weights `folder` needs at the pilot scale: its full-size stand-in in the mirror (rule
        pilot_weights); nothing elsewhere."""
        if self.plan.config.get("pilot_world") is None:
            return []
        relative = Path(folder).relative_to(self.data.root / "weights")
        return [str(Path(self.plan.config["fetch"]["mirror"]) / "pilot_weights" / f"{relative}.json")]

    def standin_args(self, experiment: str) -> list[str]:
        """The `hypvl write-standin` arguments giving the layout of the weights of outside `experiment` (the
        checkpoint's file name, for a released one) and the experiment whose model the stand-in is written from
        (`--model-of`, checked against the checkpoint's recipe)."""
        outside = self.plan.outside_weights(experiment)
        named = ["--file", outside.checkpoint] if outside.checkpoint else []
        return ["--kind", outside.library or "released", *named, "--model-of", self._standin_source(experiment)]

    def standin_from(self, experiment: str) -> str:
        """The checkpoint the stand-in of outside `experiment` is written from: its table row's trained model
        (released), our CLIP (open_clip), or its own trained stand-in (transformers)."""
        if self.plan.outside_weights(experiment).library == "transformers":
            return str(self.plan.results / "standins" / self.standin_trainer(experiment) / "checkpoint.pt")
        return self.plan.checkpoint(self._standin_source(experiment))

    def _standin_source(self, experiment: str) -> str:
        """The experiment whose model the stand-in of outside `experiment` is written from (`standin_from`)."""
        library = self.plan.outside_weights(experiment).library
        if library is None:
            return self.plan.model_of(self.plan.released_counterpart(experiment))
        if library == "open_clip":
            return self.plan.model_of(self.plan.clip_counterpart(experiment))
        return self.standin_trainer(experiment)

    def _standin_recipe(self, experiment: str) -> tuple:
        declared = self.plan.experiment(experiment)
        return (self.plan.outside_weights(experiment).architecture, self.plan.standins["backbones"][declared.backbone],
                declared.seed)

    def _trains_standin(self, experiment: str) -> bool:
        """True for a runnable outside experiment loaded by transformers (its stand-in is a model trained here)."""
        return self.plan.outside_weights(experiment).library == "transformers" and self.plan.runnable(experiment)

    def standin_trainer(self, experiment: str) -> str:
        """The outside experiment whose name the stand-in training of `experiment` runs under: the first by id
        of those loaded by transformers with the same architecture, stand-in backbone and seed."""
        recipe = self._standin_recipe(experiment)
        return next(exp for exp in self.plan.outside_experiments()
                    if self._trains_standin(exp) and self._standin_recipe(exp) == recipe)

    def standin_trainings(self) -> list[str]:
        """The experiments the stand-in training rule runs under (none where the real weights are fetched)."""
        if self.plan.standins is None:
            return []
        return sorted({self.standin_trainer(exp) for exp in self.plan.outside_experiments()
                       if self._trains_standin(exp) and self.plan.experiment(exp).source not in self.weights["local"]})

    def standin_config(self, experiment: str) -> str:
        """The shell-quoted JSON of the config sections the stand-in training of `experiment` reads."""
        return self.training.experiment_config(experiment, "standin")

    def standin_inputs(self) -> list[str]:
        """What a stand-in training needs from the data stage: the smoke world's manifest and its corpus."""
        return [str(self.data.root / "manifest.json"), self.data.grounded_summary(self.plan.standins["data"])]
