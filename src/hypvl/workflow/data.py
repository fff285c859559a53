"""The data stage's plan (workflows/data.smk, acquire.smk, grounding.smk): where each dataset lives and what a step
needs from the data stage.

At smoke scale the smoke world is synthesised; at paper scale each dataset of the acquisition manifest that config
`acquire` places is fetched into its folder (from the internet, or from the local mirror config `fetch` names) and
marked acquired. At the pilot scale the pilot world (config `pilot_world`) is written first: the mirror the acquire
jobs fetch from, and what the manifest's manual and prepare steps leave. Raw training corpora are grounded, and each
linear-probe set's train and val splits are cut from its source splits. A later step's inputs from this stage are
the smoke world's manifest, the grounding summary of the corpus it trains on, the probe splits it reads, and at
paper scale the acquisitions whose folders hold what it reads.
"""

import itertools
import os
from pathlib import Path

from hypvl.errors import InputError
from hypvl.grounding.threshold import CALIBRATED, calibration_file, reads_calibration
from hypvl.tasks import (GROUP_DATA, IMAGE_FOLDERS, NAMED_IMAGE_FOLDERS, linear_probe_datasets, task_data,
                         zero_shot_datasets)
from hypvl.train.recipe import stream_mode
from hypvl.workflow.core import Core

PROBE_FOLDERS = ("classification_dir", "probe_source_dir", "linear_probe_dir")  # eval keys: apart from each other


class DataStage:
    """Datasets, acquisitions, grounded corpora and linear-probe splits of one plan."""

    def __init__(self, plan: Core):
        self.plan = plan
        self.config = plan.config
        folders = [(key, Path(self.config["eval"][key])) for key in PROBE_FOLDERS]
        for (key, folder), (other_key, other) in itertools.combinations(folders, 2):
            if folder == other or folder in other.parents or other in folder.parents:
                raise InputError(f"config: eval.{key} ({folder}) and eval.{other_key} ({other}) overlap; the "
                                 "linear-probe step replaces its folders, so each needs its own")

    @property
    def root(self) -> Path:
        """The data folder (config `data_dir`)."""
        return Path(self.config["data_dir"])

    def inputs(self, experiment: str | None = None) -> list[str]:
        """What a step needs from the data stage: the smoke world's manifest (paper-scale data is checked by each
        step) and, for an experiment the suite trains on a grounded corpus, that corpus's grounding summary."""
        needs = [str(self.root / "manifest.json")] if self.plan.scale == "smoke" else []
        corpus = None if experiment is None else self.trained_corpus(experiment)
        return needs if corpus is None else [*needs, self.grounded_summary(corpus)]

    def pilot_world(self) -> list[str]:
        """The file the pilot world leaves in its mirror once written (rule pilot_world), where the config has one."""
        if self.config.get("pilot_world") is None:
            return []
        return [str(Path(self.config["fetch"]["mirror"]) / "pilot_world.json")]

    def pilot_detector(self, corpus: str) -> list[str]:
        """What grounding `corpus` needs of the pilot's weights: the detector stand-in in the mirror's Hub cache (rule
        pilot_detector), where a pilot corpus is grounded by a detector (not GRIT, which ships its boxes, nor a corpus
        whose boxes nothing reads)."""
        if self.config["grounding"]["raw"][corpus]["format"] == "grit" or not self.takes_boxes(corpus):
            return []
        return self._detector_standin()

    def _detector_standin(self) -> list[str]:
        """The pilot's detector stand-in (rule pilot_detector), where the pilot grounds with a detector."""
        if self.config.get("pilot_world") is None or self.config["grounding"]["detector"] == "oracle":
            return []
        return [str(Path(self.config["fetch"]["mirror"]) / "pilot_weights" / "detector.json")]

    def calibrates(self) -> bool:
        """Whether the box threshold is calibrated (config `grounding.box_threshold: calibrated`, rule
        calibrate_threshold)."""
        return self.config["grounding"]["box_threshold"] == CALIBRATED

    def calibration_file(self) -> str:
        """The file `hypvl calibrate` writes (hypvl.grounding.threshold)."""
        return str(calibration_file(self.config))

    def calibration_inputs(self) -> list[str]:
        """What calibrating needs: the calibration corpus's raw corpus (config `grounding.calibration.corpus`) and
        the pilot's detector stand-in."""
        self.calibration_file()  # the corpus is checked
        return [*self.raw_corpus_inputs(self.config["grounding"]["calibration"]["corpus"]), *self._detector_standin()]

    def calibration(self, corpus: str) -> list[str]:
        """The calibration grounding `corpus` reads its box threshold from, where it reads one (it grounds with boxes,
        `takes_boxes`, and not GRIT's own)."""
        return [self.calibration_file()] if reads_calibration(self.config, corpus, self.takes_boxes(corpus)) else []

    def takes_boxes(self, corpus: str) -> bool:
        """Whether a model the suite trains on `corpus` reads its boxes (HyCoCLIP, or `boxes: true`), of every
        experiment declared, whatever the target, or the boxes choose its samples (`keep_boxless: false`). YFCC15M's
        only model is CLIP's (MERU Table 5), so grounding it runs no detector: 15M images through it for nothing."""
        if not self.config["grounding"]["raw"].get(corpus, {}).get("keep_boxless", True):
            return True
        return any(self.trained_corpus(exp) == corpus and self.plan.trains(exp)
                   and stream_mode(self.plan.experiment(exp).method, self.plan.experiment(exp).boxes) != "pairs"
                   for exp in self.plan.experiments())

    def ground_options(self, corpus: str) -> list[str]:
        """`hypvl ground` options for `corpus`: `--no-boxes` where no model reads its boxes (`takes_boxes`)."""
        return [] if self.takes_boxes(corpus) else ["--no-boxes"]

    def ground_resources(self, corpus: str) -> dict:
        """Snakemake resources of grounding `corpus`: config `resources.jobs.ground`, no GPU where it runs no
        detector (`takes_boxes`)."""
        fixed = self.plan.step_resources("ground")
        return fixed if self.takes_boxes(corpus) else {**fixed, "gpu": None}

    def ground_retries(self) -> int | None:
        """Further jobs grounding a corpus may take, each continuing after the last one's last shard (config
        `resources.jobs.ground.attempts`): the ground rule's `retries`; None where it names none (Snakemake's own
        `--retries` then, the SLURM profile's: a job cut short continues in the next as well)."""
        attempts = self.config["resources"]["jobs"]["ground"].get("attempts")
        return None if attempts is None else attempts - 1

    def fetch_options(self, manifest: str | None) -> list[str]:
        """`hypvl acquire` options saying where to fetch from: the mirror and `manifest`, where configured."""
        mirror = self.config["fetch"]["mirror"]
        return [*(["--mirror", mirror] if mirror else []), *(["--sources", manifest] if manifest else [])]

    def acquisition_folder(self, dataset: str) -> str:
        """The folder dataset `dataset` of the acquisition manifest is fetched into (config `acquire`)."""
        return str(self.root / self.config["acquire"][dataset])

    def acquisition_marker(self, dataset: str) -> str:
        """The file `hypvl acquire` writes once `dataset` is fetched and every path the readers need is there."""
        return str(self.root / "acquired" / f"{dataset}.json")

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
        needed = {path for group in self.plan.groups for path in self.group_data(group)}
        needed |= {self.raw_corpus_path(corpus) for corpus in self.config["grounding"]["raw"]}
        return sorted(self._acquired(dataset, needed))

    def group_data(self, group: str, tasks=None) -> list[str]:
        """The paper-scale data evaluation group `group` reads (hypvl.tasks.GROUP_DATA), or only its `tasks`
        (hypvl.tasks.task_data), as paths in this config: classification splits as `<classification_dir>/<set>/<split>`
        folders, a file whose reader takes its images from a folder beside it with that folder
        (hypvl.tasks.IMAGE_FOLDERS), a dataset whose files name image folders with those (NAMED_IMAGE_FOLDERS)."""
        evaluation = self.config["eval"]
        sets, split = self.root / evaluation["classification_dir"], evaluation["classification_split"]
        items = (GROUP_DATA.get(group, ()) if tasks is None
                 else dict.fromkeys(item for task in tasks for item in task_data(task, group)))
        paths = []
        for item in items:
            if item == "classification":
                paths += [sets / name / split for name in zero_shot_datasets(self.plan.scale)]
            elif item == "probe":
                paths += [sets / name / split for name in linear_probe_datasets(self.plan.scale)]
            elif item.startswith("classification/"):
                paths.append(sets / item.removeprefix("classification/") / split)
            elif item in evaluation["datasets"]:
                path = self.root / evaluation["datasets"][item]
                paths.append(path)
                if item in IMAGE_FOLDERS:
                    paths.append(Path(os.path.normpath(path.parent / IMAGE_FOLDERS[item])))
                paths += [path / folder for folder in NAMED_IMAGE_FOLDERS.get(item, ())]
        return list(dict.fromkeys(str(path) for path in paths))

    def trained_corpus(self, experiment: str) -> str | None:
        """The grounded corpus `experiment` trains on, or None (weights from outside, or data that is not a
        grounded corpus, such as HierarCaps fine-tuning pairs)."""
        declared = self.plan.experiment(experiment)
        grounded = declared.data in self.config["corpora"] and declared.data in self.config["grounding"]["raw"]
        return declared.data if declared.source == "train" and grounded else None

    def grounded_summary(self, corpus: str) -> str:
        """The file `hypvl ground` leaves when training corpus `corpus` is grounded."""
        return str(self.root / self.config["corpora"][corpus] / "grounding.json")

    def raw_corpus_named(self, folder: str) -> str:
        """The corpus whose raw shards live in `folder` (config `grounding.raw.<corpus>.path`)."""
        return next(corpus for corpus, entry in self.config["grounding"]["raw"].items() if entry["path"] == folder)

    def raw_corpus_path(self, corpus: str) -> str:
        """The folder of training corpus `corpus`'s raw shards (config `grounding.raw.<corpus>.path`)."""
        return str(self.root / self.config["grounding"]["raw"][corpus]["path"])

    def raw_corpus_inputs(self, corpus: str) -> list[str]:
        """What grounding `corpus` needs from the data stage: at smoke scale, its synthesised raw corpus; at paper
        scale, the acquisition of the dataset whose folder holds it (config `acquire`)."""
        if self.plan.scale != "smoke":
            return self.acquisitions([self.raw_corpus_path(corpus)])
        return [str(Path(self.raw_corpus_path(corpus)) / "corpus.json")]

    def synthesized(self, paths) -> list[str]:
        """The smoke world's files holding `paths`: a raw corpus's folder by its `corpus.json` (rule
        synthesize_corpus), any other path as itself (rule synthesize_evaluation)."""
        raw = {self.raw_corpus_path(corpus): corpus for corpus in self.config["grounding"]["raw"]}
        return [self.raw_corpus_inputs(raw[path])[0] if path in raw else path for path in paths]

    def probe_datasets(self) -> list[str]:
        """The linear-probe sets (MERU Table 7) of this scale."""
        return linear_probe_datasets(self.plan.scale)

    def probe_source(self, name: str) -> str:
        """The folder of linear-probe set `name`'s source splits (the smoke world writes it; at paper scale the user
        puts CLIP_benchmark's webdataset or an image folder there)."""
        return str(self.root / self.config["eval"]["probe_source_dir"] / name)

    def probe_source_inputs(self, name: str) -> list[str]:
        """What cutting set `name`'s probe splits needs: at smoke scale its sources (the smoke world's); at paper scale
        the acquisitions whose folders hold them (config `acquire`), if any, and the pilot world where there is one
        (it writes them): sources the user placed by hand are checked by the job, which names a missing split, so that
        a run without them still plans."""
        source = self.probe_source(name)
        return [source] if self.plan.scale == "smoke" else [*self.acquisitions([source]), *self.pilot_world()]

    def probe_folder(self, name: str) -> str:
        """The folder of linear-probe set `name`'s train and val splits (`hypvl probe-splits`)."""
        return str(self.root / self.config["eval"]["linear_probe_dir"] / name)

    def probe_splits_options(self) -> list[str]:
        """`hypvl probe-splits` options beyond name, source and dest: sources that are scaled-down stand-ins (config
        `eval.probe_sources_scaled`: the smoke and pilot worlds'), and the class cap of config `eval.max_classes`."""
        evaluation = self.config["eval"]
        cap = evaluation.get("max_classes")
        return [*(["--scaled-source"] if evaluation["probe_sources_scaled"] else []),
                *(["--max-classes", str(cap)] if cap else [])]

    def probe_inputs(self, tasks) -> list[str]:
        """The linear-probe splits (rule probe_splits) the `linprobe_<set>` ones of `tasks` read."""
        tasks = set(tasks)
        return [self.probe_folder(name) for name in self.probe_datasets() if f"linprobe_{name}" in tasks]
