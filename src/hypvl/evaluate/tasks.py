"""The task registry: every evaluation task id, its metrics (direction), and the group that computes it.

A *group* is what one evaluation job computes for one experiment (one process, one model load):
e.g. `zeroshot` writes every `zs_<dataset>.json`. Tasks that no group computes yet are reported as
missing rather than planned.
"""

from dataclasses import dataclass

from hypvl.data.catalog import dataset_names
from hypvl.data.synthetic.build import CLASSIFICATION_SETS


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool = True


ZERO_SHOT_METRICS = (Metric("mean_per_class_accuracy"), Metric("top1"))


def zero_shot_datasets(scale: str) -> list[str]:
    """Classification sets the scale provides: the smoke world's, or the 20 of the catalog."""
    return list(CLASSIFICATION_SETS) if scale == "smoke" else dataset_names()


def group_tasks(scale: str) -> dict[str, list[str]]:
    """Group name -> task ids it writes, at `scale`."""
    return {"zeroshot": [f"zs_{name}" for name in zero_shot_datasets(scale)]}


def task_group(task: str, scale: str) -> str | None:
    """The group computing `task` at `scale`, or None where the suite cannot compute it yet."""
    for group, tasks in group_tasks(scale).items():
        if task in tasks:
            return group
    return None
