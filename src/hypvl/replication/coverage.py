"""Why a printed cell has no number of ours: the reasons compare writes, table reports show and `hypvl coverage` counts.

A cell is computed (every metric it needs is measured), external (the spec puts its row or column outside the
suite) or missing, for one of REASONS:
  not run yet                 the workflow plans its jobs; they have not run
  needs weights from outside  its model is released or pretrained weights, which the plan does not obtain
  needs data the scale lacks  its training corpus is not in the config, or its task ran and could not compute
                              the metric on this scale's data
  not built                   the plan cannot make its model (a method, an override or a start it does not build)
Which experiments and tasks the plan does not produce, and why, is the plan's word (`hypvl.workflow.reports`,
`ReportStage.blockers`); this module joins it with the metrics present. Torch- and pandas-free.
"""

import json
from dataclasses import dataclass, field

from hypvl.errors import InputError

NOT_RUN = "not run yet"
NEEDS_WEIGHTS = "needs weights from outside"
NEEDS_DATA = "needs data the scale lacks"
NOT_BUILT = "not built"
REASONS = (NOT_RUN, NEEDS_WEIGHTS, NEEDS_DATA, NOT_BUILT)


@dataclass(frozen=True)
class Blockers:
    """Experiments and tasks the plan produces no metric for: id -> reason (one of REASONS)."""

    experiments: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"experiments": self.experiments, "tasks": self.tasks}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, source: str = "--blockers") -> "Blockers":
        """Parse `to_json`'s text; InputError names `source` when it is not that."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"{source}: not valid JSON ({error})") from None
        if not isinstance(document, dict) or set(document) - {"experiments", "tasks"}:
            raise InputError(f"{source}: expected a JSON object with `experiments` and `tasks`")
        parts = {key: document.get(key, {}) for key in ("experiments", "tasks")}
        for key, part in parts.items():
            if not isinstance(part, dict) or any(reason not in REASONS for reason in part.values()):
                raise InputError(f"{source}: {key} must map ids to reasons ({', '.join(REASONS)})")
        return cls(**parts)


def missing_reason(experiment: str, tasks, blockers: Blockers, lacking: bool) -> str:
    """Why a cell of `experiment` over `tasks` has no number: the experiment's blocker, else a task's; else the data
    (`lacking`: a task ran and did not write the metric); else its jobs have not run."""
    if experiment in blockers.experiments:
        return blockers.experiments[experiment]
    blocked = [blockers.tasks[task] for task in tasks if task in blockers.tasks]
    if blocked:
        return blocked[0]
    return NEEDS_DATA if lacking else NOT_RUN
