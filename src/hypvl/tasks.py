"""The task registry: every evaluation task id, its metrics (direction, chance level, unit) and its group.

A *group* is what one evaluation job computes for one experiment (one process, one model load), e.g.
`zeroshot` writes every `zs_<dataset>.json`; each group is run by one module of `hypvl.evaluate`
whose `run(ctx, task)` computes one task. This module imports no torch and no evaluation code, so the
workflow plans fast and replication specs and metric JSONs are checked against it from any layer.
Units (`Metric.kind`, with the range `KINDS` allows): accuracies, recalls and AP in percent; hierarchical
set metrics, HierarCaps P/R and BREEDS recall as fractions; TIE/LCA in edges; Kendall tau and Spearman rho
in [-1, 1]; radii and regularisation constants are non-negative.
"""

import math
from dataclasses import dataclass
from functools import lru_cache

from hypvl.data.catalog import dataset_names, load_dataset_info
from hypvl.worlds.smoke.classification_sets import ALL_CLASSIFICATION_SETS
from hypvl.errors import number_problem, shown

# metric kind -> closed range of its values
KINDS = {"percent": (0.0, 100.0), "fraction": (0.0, 1.0), "correlation": (-1.0, 1.0),
         "nonnegative": (0.0, math.inf)}
KIND_UNITS = {"percent": "%", "fraction": "fraction", "correlation": "correlation", "nonnegative": "non-negative"}


@dataclass(frozen=True)
class Metric:
    """A metric: whether higher is better (None: a statistic with no direction), chance level, kind and the unit
    reports name (`unit`; default the kind's, KIND_UNITS)."""

    name: str
    higher_is_better: bool | None = True
    chance: float | None = None
    kind: str = "percent"
    unit: str = ""

    @property
    def unit_label(self) -> str:
        """The unit a report names: `unit`, else the kind's."""
        return self.unit or KIND_UNITS[self.kind]


@dataclass(frozen=True)
class Task:
    """A task; `extra_kind` is the kind of further metrics it writes whose names depend on the data
    (VL-CheckList groups, BREEDS subsets), None where it writes only the declared ones."""

    id: str
    group: str
    metrics: tuple[Metric, ...]
    extra_kind: str | None = None

    def metric(self, name: str) -> Metric | None:
        """The declared metric `name`, or one of kind `extra_kind`; None where the task has no such metric."""
        for metric in self.metrics:
            if metric.name == name:
                return metric
        return None if self.extra_kind is None else Metric(name, kind=self.extra_kind)


# group -> module whose run(ctx, task) computes its tasks
GROUP_MODULES = {
    "zeroshot": "hypvl.evaluate.zeroshot",
    "hierarchy": "hypvl.evaluate.hierarchical",
    "retrieval": "hypvl.evaluate.retrieval",
    "detection": "hypvl.evaluate.detection",
    "scene": "hypvl.evaluate.scene",
    "hierarcaps": "hypvl.evaluate.hierarcaps",
    "lexical": "hypvl.evaluate.lexical",
    "breeds_prompts": "hypvl.evaluate.lexical",
    "linprobe": "hypvl.evaluate.linprobe",
    "stats": "hypvl.evaluate.stats",
}
# group -> the paper-scale data it reads (what the workflow acquires before it runs): keys of the config's
# `eval.datasets`; `classification` (every zero-shot set), `classification/<name>` (one set), or `probe` (the
# linear-probe sets, whose train and val splits `hypvl probe-splits` then cuts)
GROUP_DATA = {
    "zeroshot": ("classification",),
    "hierarchy": ("imagenet_isa", "classification/imagenet"),
    "retrieval": ("coco_captions", "flickr30k"),
    "detection": ("coco_instances",),
    "scene": ("vlchecklist", "vg_attribution"),
    "hierarcaps": ("hierarcaps_test",),
    "lexical": ("hyperlex", "breeds", "classification/imagenet"),
    "breeds_prompts": ("breeds", "classification/imagenet"),
    "linprobe": ("probe",),
    "stats": ("coco_captions", "coco_instances"),
}
# `eval.datasets` key -> the folder its reader takes the images from, relative to the file's folder (each format's
# `default_image_root`): acquisition checks it with the file, so that a prepare step not yet done (Flickr30K's image
# zip, HierarCaps' test images) is named by the acquire job, not found missing by an evaluation
IMAGE_FOLDERS = {"coco_captions": "../val2017", "coco_instances": "../val2017", "flickr30k": "flickr30k_images",
                 "hierarcaps_test": "../assets/test_imgs", "vg_attribution": "images"}
# `eval.datasets` key -> the image folders its own files name, relative to it (the IMG_ROOTs of VL-CheckList's corpus
# YAMLs: Visual Genome's, SWiG's, HAKE's), checked by acquisition likewise (HAKE's images are a manual step)
NAMED_IMAGE_FOLDERS = {"vlchecklist": ("vg", "swig", "hake")}
RETRIEVAL_SETS = ("coco", "flickr30k")
# HierarCaps App. C.7 (Table 7): BREEDS scored by one two-slot prompt per label pair, the specific label in the first
# slot; task `breeds_prompt_<key>` each, all in group `breeds_prompts` (only Table 7 asks for them)
BREEDS_SINGLE_PROMPTS = {
    "picture_a_type_of": "a picture of a {}, a type of {}",
    "of_type": "a {} of type {}",
    "this_is_a_type_of": "this is a {}, a type of {}",
    "picture_of_type": "a picture of a {} of type {}",
    "picture_which_is": "a picture of a {} which is a {}",
}
# VL-CheckList Type -> its categories and groups (VL-CheckList's taxonomy, as syntax-VSE Table 3 prints it)
VLC_METRICS = {
    "object": ("location", "size", "location_center", "location_margin", "location_mid",
               "size_large", "size_medium", "size_small"),
    "attribute": ("action", "color", "material", "size", "state"),
    "relation": ("action", "spatial"),
}
# task -> the items of its group's GROUP_DATA it reads, where it reads only some of them (`task_data`)
TASK_DATA = {"ret_coco": ("coco_captions",), "ret_flickr30k": ("flickr30k",), "vg_attribution": ("vg_attribution",),
             **{f"vlc_{kind}": ("vlchecklist",) for kind in VLC_METRICS}}


def task_data(task: str, group: str) -> tuple[str, ...]:
    """The paper-scale data task `task` of `group` reads, as GROUP_DATA names it: one classification set for a
    zero-shot task, TASK_DATA's items, else its group's."""
    if task.startswith("zs_"):
        return (f"classification/{task.removeprefix('zs_')}",)
    return TASK_DATA.get(task, GROUP_DATA.get(group, ()))


def zero_shot_datasets(scale: str) -> list[str]:
    """Classification sets the scale provides: the smoke world's 20 stand-ins, or the 20 of the catalog."""
    return list(ALL_CLASSIFICATION_SETS) if scale == "smoke" else dataset_names()


def linear_probe_datasets(scale: str) -> list[str]:
    """MERU Table 7's linear-probe sets (the 20 but ImageNet) that the scale provides."""
    return [name for name in zero_shot_datasets(scale) if name != "imagenet"]


def _chance(scale: str, name: str) -> float:
    """Chance accuracy in percent of classification set `name`."""
    if scale == "smoke":
        return 100.0 / len(ALL_CLASSIFICATION_SETS[name].classes)
    return load_dataset_info(name).chance


def _accuracy(chance: float | None = None, name: str = "accuracy") -> Metric:
    return Metric(name, True, chance)


def _zero_shot_metrics(chance: float) -> tuple[Metric, ...]:
    """Mean per-class accuracy and top-1, and top-5 (chance 5x top-1's) on a set of five classes or more."""
    metrics = (_accuracy(chance, "mean_per_class_accuracy"), _accuracy(chance, "top1"))
    top5 = (_accuracy(5 * chance, "top5"),) if round(100 / chance) >= 5 else ()
    return metrics + top5


def all_tasks(scale: str) -> dict[str, Task]:
    """Task id -> Task, for every task the suite computes at `scale` (a fresh mapping of the registry)."""
    return dict(_registry(scale))


@lru_cache(maxsize=None)
def _registry(scale: str) -> dict[str, Task]:
    """Task id -> Task at `scale`, built once per process (planning asks for it once per table cell)."""
    tasks = [Task(f"zs_{name}", "zeroshot", _zero_shot_metrics(_chance(scale, name)))
             for name in zero_shot_datasets(scale)]
    tasks.append(Task("hier_imagenet", "hierarchy", (
        *(Metric(name, False, kind="nonnegative", unit="edges") for name in ("tie", "lca")),
        *(Metric(name, kind="fraction") for name in ("jaccard", "h_precision", "h_recall")))))
    recalls = tuple(Metric(f"{d}_r{k}") for d in ("t2i", "i2t") for k in (1, 5, 10))
    tasks += [Task(f"ret_{name}", "retrieval", recalls) for name in RETRIEVAL_SETS]
    tasks.append(Task("det_coco_novel", "detection", (Metric("ap"), Metric("ap50"))))
    tasks += [Task(f"vlc_{kind}", "scene", (_accuracy(50.0), *(Metric(name, True, 50.0) for name in groups)),
                   extra_kind="percent")
              for kind, groups in VLC_METRICS.items()]
    tasks.append(Task("vg_attribution", "scene", (_accuracy(50.0),)))
    tasks.append(Task("hierarcaps", "hierarcaps", tuple(
        Metric(f"{name}{suffix}", kind="correlation" if name == "kendall_tau" else "fraction")
        for suffix in ("", "_paper") for name in ("precision", "recall", "kendall_tau"))))
    tasks.append(Task("hyperlex", "lexical", (Metric("rho_all", True, 0.0, "correlation"),
                                              Metric("rho_n", True, 0.0, "correlation"))))
    tasks.append(Task("breeds", "lexical", tuple(Metric(f"r{k}{sign}", kind="fraction")
                                                 for sign in ("", "_plus_xi") for k in (1, 5)),
                      extra_kind="fraction"))
    tasks += [Task(f"breeds_prompt_{key}", "breeds_prompts", tuple(Metric(f"r{k}", kind="fraction") for k in (1, 5)),
                   extra_kind="fraction") for key in BREEDS_SINGLE_PROMPTS]
    tasks += [Task(f"linprobe_{name}", "linprobe", (_accuracy(_chance(scale, name)), Metric("val_accuracy"),
                                                     Metric("best_c", None, kind="nonnegative")))
              for name in linear_probe_datasets(scale)]
    tasks.append(Task("stats_radius", "stats", tuple(
        Metric(f"{kind}_radius_{stat}", None, kind="nonnegative")
        for kind in ("image", "text", "box") for stat in ("mean", "std"))))
    return {task.id: task for task in tasks}


def group_tasks(scale: str) -> dict[str, list[str]]:
    """Group name -> task ids it writes, at `scale`."""
    groups: dict[str, list[str]] = {group: [] for group in GROUP_MODULES}
    for task in all_tasks(scale).values():
        groups[task.group].append(task.id)
    return groups


def task_group(task: str, scale: str) -> str | None:
    """The group computing `task` at `scale`, or None where the suite cannot compute it."""
    found = all_tasks(scale).get(task)
    return None if found is None else found.group


def declared_tasks() -> dict[str, Task]:
    """Task id -> Task over every scale: what a replication spec may name."""
    return {**all_tasks("full"), **all_tasks("smoke")}


def metric_problem(task: str, metric: str, value, scale: str) -> str | None:
    """Why `value` cannot be `metric` of `task` at `scale` (unknown task or metric, not a finite number,
    outside its kind's range), or None where it can."""
    found = all_tasks(scale).get(task)
    if found is None:
        return f"{task!r} is not a task of the suite at scale {scale!r}"
    declared = found.metric(metric)
    if declared is None:
        return f"{metric!r} is not a metric of task {task!r}"
    problem = number_problem(value)  # finite and within NUMBER_LIMIT, whatever its kind
    if problem is not None:
        return f"metric {metric!r} is {shown(value)}, {problem}"
    low, high = KINDS[declared.kind]
    if not low <= value <= high:
        return f"metric {metric!r} is {value!r}, outside [{low:g}, {high:g}] for a {declared.kind}"
    return None
