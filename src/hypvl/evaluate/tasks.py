"""The task registry: every evaluation task id, its metrics (direction, chance level) and its group.

A *group* is what one evaluation job computes for one experiment (one process, one model load), e.g.
`zeroshot` writes every `zs_<dataset>.json`; each group is run by one module of `hypvl.evaluate`
whose `run(ctx, task)` computes one task. This module imports no torch, so the workflow can plan fast.
Units: accuracies, recalls and AP in percent; hierarchical set metrics, HierarCaps P/R and BREEDS
recall as fractions; TIE/LCA in edges; Kendall tau and Spearman rho in [-1, 1]; radii in embedding units.
"""

from dataclasses import dataclass

from hypvl.data.catalog import dataset_names, load_dataset_info
from hypvl.data.synthetic.classification import ALL_CLASSIFICATION_SETS

@dataclass(frozen=True)
class Metric:
    """A metric: whether higher is better (None: a statistic with no direction) and its chance level."""

    name: str
    higher_is_better: bool | None = True
    chance: float | None = None


@dataclass(frozen=True)
class Task:
    id: str
    group: str
    metrics: tuple[Metric, ...]


# group -> module whose run(ctx, task) computes its tasks
GROUP_MODULES = {
    "zeroshot": "hypvl.evaluate.zeroshot",
    "hierarchy": "hypvl.evaluate.hierarchical",
    "retrieval": "hypvl.evaluate.retrieval",
    "detection": "hypvl.evaluate.detection",
    "scene": "hypvl.evaluate.scene",
    "hierarcaps": "hypvl.evaluate.hierarcaps",
    "lexical": "hypvl.evaluate.lexical",
    "linprobe": "hypvl.evaluate.linprobe",
    "stats": "hypvl.evaluate.stats",
}
RETRIEVAL_SETS = ("coco", "flickr30k")
VLC_TYPES = ("object", "attribute", "relation")


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


def all_tasks(scale: str) -> dict[str, Task]:
    """Task id -> Task, for every task the suite computes at `scale`."""
    tasks = [Task(f"zs_{name}", "zeroshot", (_accuracy(_chance(scale, name), "mean_per_class_accuracy"),
                                             _accuracy(_chance(scale, name), "top1")))
             for name in zero_shot_datasets(scale)]
    tasks.append(Task("hier_imagenet", "hierarchy", (
        Metric("tie", False), Metric("lca", False), Metric("jaccard"), Metric("h_precision"), Metric("h_recall"))))
    recalls = tuple(Metric(f"{d}_r{k}") for d in ("t2i", "i2t") for k in (1, 5, 10))
    tasks += [Task(f"ret_{name}", "retrieval", recalls) for name in RETRIEVAL_SETS]
    tasks.append(Task("det_coco_novel", "detection", (Metric("ap"), Metric("ap50"))))
    tasks += [Task(f"vlc_{kind}", "scene", (_accuracy(50.0),)) for kind in VLC_TYPES]
    tasks.append(Task("vg_attribution", "scene", (_accuracy(50.0),)))
    tasks.append(Task("hierarcaps", "hierarcaps", tuple(
        Metric(f"{name}{suffix}") for suffix in ("", "_paper") for name in ("precision", "recall", "kendall_tau"))))
    tasks.append(Task("hyperlex", "lexical", (Metric("rho_all", True, 0.0), Metric("rho_n", True, 0.0))))
    tasks.append(Task("breeds", "lexical", tuple(Metric(f"r{k}{sign}") for sign in ("", "_plus_xi") for k in (1, 5))))
    tasks += [Task(f"linprobe_{name}", "linprobe", (_accuracy(_chance(scale, name)),))
              for name in linear_probe_datasets(scale)]
    tasks.append(Task("stats_radius", "stats", tuple(
        Metric(f"{kind}_radius_{stat}", None) for kind in ("image", "text", "box") for stat in ("mean", "std"))))
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
